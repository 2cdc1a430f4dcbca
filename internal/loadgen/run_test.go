package loadgen

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testConfig is a small closed-loop run against url.
func testConfig(url string) Config {
	c := DefaultConfig()
	c.URL = url
	c.Model = "test-model"
	c.ISL = 32
	c.OSL = 8
	c.Concurrency = 4
	c.Requests = 20
	c.Warmup = 2
	c.Timeout = 5 * time.Second
	return c
}

// runFor runs cfg with a deadline that fails the test instead of hanging.
func runFor(t *testing.T, cfg Config) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Interrupted {
		t.Fatal("run did not finish before the test deadline")
	}
	return rep
}

func TestRunAgainstBaseline(t *testing.T) {
	for _, api := range []API{APIChat, APICompletions} {
		t.Run(string(api), func(t *testing.T) {
			srv := httptest.NewServer(BaselineHandler(BaselineOptions{}))
			defer srv.Close()
			cfg := testConfig(srv.URL)
			cfg.API = api
			rep := runFor(t, cfg)

			n := cfg.Requests
			if rep.Launched != n || rep.Completed != n || rep.Failed != 0 || rep.Cancelled != 0 {
				t.Fatalf("launched %d, completed %d, failed %d (%v), cancelled %d; want %d completed",
					rep.Launched, rep.Completed, rep.Failed, rep.ErrorSamples, rep.Cancelled, n)
			}
			if rep.OutputTokens != int64(n*cfg.OSL) || rep.UsageMissing != 0 {
				t.Errorf("output tokens %d (usage missing %d), want %d from usage", rep.OutputTokens, rep.UsageMissing, n*cfg.OSL)
			}
			if rep.InputTokens != int64(n*cfg.ISL) {
				t.Errorf("input tokens %d, want %d", rep.InputTokens, n*cfg.ISL)
			}
			if rep.TTFT.Count != n || rep.E2E.Count != n || rep.TPOT.Count != n {
				t.Errorf("samples: ttft %d, e2e %d, tpot %d; want %d each", rep.TTFT.Count, rep.E2E.Count, rep.TPOT.Count, n)
			}
			if want := n * (cfg.OSL - 1); rep.ITL.Count != want {
				t.Errorf("ITL samples %d, want %d", rep.ITL.Count, want)
			}
			if want := int64(n * cfg.OSL); rep.ContentChunks != want { // a token a chunk
				t.Errorf("content chunks %d, want %d", rep.ContentChunks, want)
			}
			if rep.RequestThroughput <= 0 || rep.OutputTokenThroughput <= 0 || rep.InputTokenThroughput <= 0 || rep.ArrivalRate <= 0 {
				t.Errorf("throughputs not positive: %+v", rep)
			}
			if rep.Config.API != api || rep.Config.Arrival != "concurrency" || rep.Config.Concurrency != 4 {
				t.Errorf("config recorded as %+v", rep.Config)
			}
		})
	}
}

func TestRunMeasuresTTFTDelay(t *testing.T) {
	const delay = 20 * time.Millisecond
	srv := httptest.NewServer(BaselineHandler(BaselineOptions{TTFT: delay}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Requests = 8
	rep := runFor(t, cfg)
	if rep.Completed != 8 {
		t.Fatalf("completed %d, want 8 (%v)", rep.Completed, rep.ErrorSamples)
	}
	if rep.TTFT.P50 < 20 || rep.TTFT.Min < 20 || rep.E2E.Min < 20 {
		t.Errorf("TTFT p50 %.3f ms, min %.3f ms, e2e min %.3f ms; want all ≥ 20 ms", rep.TTFT.P50, rep.TTFT.Min, rep.E2E.Min)
	}
}

func TestRunPoissonAgainstBaseline(t *testing.T) {
	srv := httptest.NewServer(BaselineHandler(BaselineOptions{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Rate = 2000
	cfg.MaxInflight = 16
	cfg.Requests = 60
	rep := runFor(t, cfg)
	if rep.Completed != 60 || rep.Failed != 0 {
		t.Fatalf("completed %d, failed %d (%v); want 60", rep.Completed, rep.Failed, rep.ErrorSamples)
	}
	if rep.ArrivalRate <= 0 || rep.Config.Arrival != "poisson" || rep.Config.MaxInflight != 16 {
		t.Errorf("arrival rate %g, config %+v", rep.ArrivalRate, rep.Config)
	}
}

func TestRunStopsAfterDuration(t *testing.T) {
	srv := httptest.NewServer(BaselineHandler(BaselineOptions{ITL: time.Millisecond}))
	defer srv.Close()
	for _, rate := range []float64{0, 200} {
		cfg := testConfig(srv.URL)
		cfg.Requests = 0
		cfg.Duration = 100 * time.Millisecond
		cfg.Rate = rate
		rep := runFor(t, cfg)
		if rep.Launched == 0 || rep.Completed != rep.Launched {
			t.Errorf("rate %g: launched %d, completed %d; want every launched request completed", rate, rep.Launched, rep.Completed)
		}
	}
}

func TestRunSharedPrefixWorkload(t *testing.T) {
	srv := httptest.NewServer(BaselineHandler(BaselineOptions{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Workload = WorkloadSharedPrefix
	cfg.Groups, cfg.PrefixLen, cfg.SuffixLen = 3, 40, 5
	rep := runFor(t, cfg)
	if rep.Completed != cfg.Requests || rep.InputTokens != int64(cfg.Requests*45) {
		t.Errorf("completed %d, input tokens %d; want %d and %d", rep.Completed, rep.InputTokens, cfg.Requests, cfg.Requests*45)
	}
}

func TestRunInterruptedCancelsInFlight(t *testing.T) {
	arrived := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Warmup = 0
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for range cfg.Concurrency {
			<-arrived
		}
		cancel()
	}()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Cancelled != cfg.Concurrency || rep.Failed != 0 || rep.Completed != 0 {
		t.Errorf("interrupted %v, cancelled %d, failed %d, completed %d; want interrupted with %d cancelled",
			rep.Interrupted, rep.Cancelled, rep.Failed, rep.Completed, cfg.Concurrency)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.API = "embeddings"
	cfg.Requests = 0
	_, err := Run(t.Context(), cfg)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"model is required", "api \"embeddings\"", "set requests or duration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
