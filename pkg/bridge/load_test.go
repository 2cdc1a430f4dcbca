package bridge_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// loadRecorder is a backend.EventPublisher that keeps the loads.
type loadRecorder struct {
	mu    sync.Mutex
	loads []kvblock.LoadEvent
	ranks []int
}

func (r *loadRecorder) PublishKVEvent(context.Context, int, any) error { return nil }

func (r *loadRecorder) PublishLoad(_ context.Context, rank int, m any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loads = append(r.loads, m.(kvblock.LoadEvent))
	r.ranks = append(r.ranks, rank)
	return nil
}

func (r *loadRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.loads)
}

// latest returns the last load published for each rank.
func (r *loadRecorder) latest() map[int]kvblock.LoadEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]kvblock.LoadEvent{}
	for i, l := range r.loads {
		out[r.ranks[i]] = l
	}
	return out
}

// loadEngine starts a bridge over srv polling its load every 20 ms.
func loadEngine(t *testing.T, dialect, url string, dp int, log *testenv.Buffer) (*bridge.Engine, *loadRecorder) {
	t.Helper()
	cfg := bridge.Config{Dialect: dialect, URL: url, StartTimeout: 5 * time.Second, KVBlockSize: 16,
		DataParallelSize: dp, LoadInterval: 20 * time.Millisecond}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	e := newEngine(t, cfg)
	rec := &loadRecorder{}
	e.SetEventPublisher(rec)
	t.Cleanup(func() {
		if err := e.Cleanup(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if _, err := e.Start(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	return e, rec
}

func fpm(rank uint32, running, waiting, active, total uint64, usage, hit float32) kvblock.LoadEvent {
	return kvblock.LoadEvent{WorkerID: 7, Data: kvblock.ForwardPassMetrics{
		WorkerStats: kvblock.WorkerStats{DataParallelRank: &rank, RequestActiveSlots: running, NumRequestsWaiting: waiting},
		KVStats:     kvblock.KVStats{KVActiveBlocks: active, KVTotalBlocks: total, GPUCacheUsagePerc: usage, GPUPrefixCacheHitRate: hit},
	}}
}

// Each dialect's /metrics becomes one LoadEvent per rank with the
// numbers the router reads: running and waiting requests, KV usage, and
// KV blocks when the engine tells its capacity; an unchanged load is not
// published again, a changed one is.
func TestLoadIsPublishedPerRank(t *testing.T) {
	for _, tc := range []struct {
		dialect string
		dp      int
		loads   []bridgetest.Load
		want    map[int]kvblock.LoadEvent
	}{
		{bridge.DialectVLLM, 2,
			[]bridgetest.Load{{Rank: 0, Running: 3, Waiting: 1, Usage: 0.25, TotalBlocks: 400}, {Rank: 1, TotalBlocks: 400}},
			map[int]kvblock.LoadEvent{0: fpm(0, 3, 1, 100, 400, 0.25, 0), 1: fpm(1, 0, 0, 0, 400, 0, 0)}},
		{bridge.DialectSGLang, 2,
			[]bridgetest.Load{{Rank: 0, Running: 2, Waiting: 5, Usage: 0.5, TotalBlocks: 100, UsedTokens: 790, HitRate: 0.25}, {Rank: 1, Running: 1, TotalBlocks: 100}},
			map[int]kvblock.LoadEvent{0: fpm(0, 2, 5, 50, 100, 0.5, 0.25), 1: fpm(1, 1, 0, 0, 100, 0, 0)}},
		{bridge.DialectLlamaCpp, 1,
			[]bridgetest.Load{{Running: 1, Waiting: 2, Usage: 0.75}},
			map[int]kvblock.LoadEvent{0: fpm(0, 1, 2, 0, 0, 0.75, 0)}},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			srv := bridgetest.New(tc.dialect, bridgetest.Options{})
			t.Cleanup(srv.Close)
			srv.SetLoad(tc.loads...)
			e, rec := loadEngine(t, tc.dialect, srv.URL, tc.dp, nil)
			if got, want := e.KVEventSources(), []int{0, 1}[:tc.dp]; !slices.Equal(got, want) {
				t.Errorf("KVEventSources = %v with load polling only, want %v", got, want)
			}
			testenv.WaitFor(t, 5*time.Second, "a load per rank", func() bool { return len(rec.latest()) == tc.dp })
			if diff := cmp.Diff(tc.want, rec.latest()); diff != "" {
				t.Errorf("loads (-want +got):\n%s", diff)
			}
			// Unchanged: nothing more over several scrapes.
			n, calls := rec.count(), srv.MetricsCalls()
			testenv.WaitFor(t, 5*time.Second, "more scrapes", func() bool { return srv.MetricsCalls() >= calls+3 })
			if rec.count() != n {
				t.Errorf("%d loads published for an unchanged engine, want %d", rec.count(), n)
			}
			// Changed: published.
			next := append([]bridgetest.Load(nil), tc.loads...)
			next[0].Waiting = 9
			srv.SetLoad(next...)
			testenv.WaitFor(t, 5*time.Second, "the changed load", func() bool {
				return rec.latest()[0].Data.WorkerStats.NumRequestsWaiting == 9
			})
			if got := rec.count(); got != n+1 {
				t.Errorf("%d loads after one rank changed, want %d", got, n+1)
			}
		})
	}
}

// vLLM before V1 names KV usage vllm:gpu_cache_usage_perc.
func TestLoadReadsVLLMLegacyUsageName(t *testing.T) {
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{})
	t.Cleanup(srv.Close)
	srv.SetLegacyVLLMNames(true)
	srv.SetLoad(bridgetest.Load{Running: 1, Usage: 0.5})
	_, rec := loadEngine(t, bridge.DialectVLLM, srv.URL, 1, nil)
	testenv.WaitFor(t, 5*time.Second, "a load", func() bool { return rec.count() > 0 })
	if diff := cmp.Diff(fpm(0, 1, 0, 0, 0, 0.5, 0), rec.latest()[0]); diff != "" {
		t.Errorf("load (-want +got):\n%s", diff)
	}
}

// A scrape outage publishes nothing and is logged once, however long it
// lasts; its end is logged, and the load is published again.
func TestLoadScrapeOutageIsLoggedOnce(t *testing.T) {
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{})
	t.Cleanup(srv.Close)
	srv.SetLoad(bridgetest.Load{Running: 1})
	log := &testenv.Buffer{}
	_, rec := loadEngine(t, bridge.DialectVLLM, srv.URL, 1, log)
	testenv.WaitFor(t, 5*time.Second, "a load", func() bool { return rec.count() == 1 })

	srv.SetMetricsStatus(http.StatusServiceUnavailable)
	calls := srv.MetricsCalls()
	testenv.WaitFor(t, 5*time.Second, "failed scrapes", func() bool { return srv.MetricsCalls() >= calls+5 })
	if n := strings.Count(log.String(), "cannot read the engine's load metrics"); n != 1 {
		t.Errorf("%d outage lines over 5 failed scrapes, want 1:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "503") {
		t.Errorf("the outage line does not say why:\n%s", log.String())
	}
	if rec.count() != 1 {
		t.Errorf("%d loads published during the outage, want none more", rec.count()-1)
	}

	srv.SetMetricsStatus(0)
	testenv.WaitFor(t, 5*time.Second, "the load after the outage", func() bool { return rec.count() == 2 })
	if !strings.Contains(log.String(), "load metrics answer again") {
		t.Errorf("the end of the outage is not logged:\n%s", log.String())
	}
	// A second outage is logged again.
	srv.SetMetricsStatus(http.StatusInternalServerError)
	testenv.WaitFor(t, 5*time.Second, "the second outage's line", func() bool {
		return strings.Count(log.String(), "cannot read the engine's load metrics") == 2
	})
}

// A /metrics without the dialect's gauges (llama.cpp without --metrics
// answers 501; an engine without them) is an outage too.
func TestLoadWithoutGaugesIsAnOutage(t *testing.T) {
	srv := bridgetest.New(bridge.DialectSGLang, bridgetest.Options{})
	t.Cleanup(srv.Close)
	log := &testenv.Buffer{}
	_, rec := loadEngine(t, bridge.DialectSGLang, srv.URL, 1, log)
	testenv.WaitFor(t, 5*time.Second, "the outage line", func() bool {
		return strings.Contains(log.String(), "sglang:num_running_reqs")
	})
	if rec.count() != 0 {
		t.Errorf("%d loads published without gauges", rec.count())
	}
}

// Without Config.KVEvents and Config.LoadInterval nothing is polled and no
// rank publishes.
func TestLoadIsOffByDefault(t *testing.T) {
	e, srv := started(t, bridge.DialectVLLM, bridgetest.Options{})
	if got := e.KVEventSources(); got != nil {
		t.Errorf("KVEventSources = %v, want none", got)
	}
	time.Sleep(100 * time.Millisecond)
	if n := srv.MetricsCalls(); n != 0 {
		t.Errorf("%d scrapes with load polling off", n)
	}
	if _, err := bridge.New(bridge.Config{Dialect: bridge.DialectVLLM, URL: srv.URL, LoadInterval: -time.Second}); err == nil {
		t.Error("New accepted a negative load interval")
	}
}

// Healthy asks the engine's /health: nil while it answers, an error once
// it is gone.
func TestHealthy(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			e, srv := started(t, d, bridgetest.Options{})
			calls := srv.HealthCalls()
			if err := e.Healthy(t.Context()); err != nil {
				t.Fatalf("Healthy: %v", err)
			}
			if srv.HealthCalls() != calls+1 {
				t.Errorf("Healthy did not ask /health")
			}
			srv.Close()
			if err := e.Healthy(t.Context()); err == nil {
				t.Fatal("Healthy = nil with the engine gone")
			}
		})
	}
}

// sinklessRecorder is a publisher whose loads go nowhere (a worker
// without an event plane).
type sinklessRecorder struct{ loadRecorder }

func (*sinklessRecorder) PublishesLoad() bool { return false }

// A publisher whose loads go nowhere gets no poller: the engine's
// /metrics is never asked, and the start says so.
func TestLoadIsNotPolledWithoutAnEventPlane(t *testing.T) {
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{})
	t.Cleanup(srv.Close)
	var log testenv.Buffer
	e := newEngine(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: srv.URL, StartTimeout: 5 * time.Second, KVBlockSize: 16,
		LoadInterval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	rec := &sinklessRecorder{}
	e.SetEventPublisher(rec)
	if _, err := e.Start(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "not polled: no event plane") {
		t.Errorf("the start does not say that /metrics is not polled:\n%s", log.String())
	}
	if err := e.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := srv.MetricsCalls(); n != 0 || rec.count() != 0 {
		t.Errorf("%d scrapes and %d loads published without an event plane", n, rec.count())
	}
}
