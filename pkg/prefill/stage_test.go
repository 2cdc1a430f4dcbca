package prefill_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/prefill"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newStage builds the stage over the fleet's decode workers.
func newStage(t *testing.T, f *fleet, decodes int, cfg prefill.Config, d decider) (*prefill.Stage, *prefill.Metrics) {
	t.Helper()
	met, err := prefill.NewMetrics(prometheus.NewRegistry(), "dynamo_frontend")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.Metrics = "demo", met
	next := router.New(f.client(t, decodeEP, decodes), &router.RoundRobin{}, nil, nil)
	if d == nil {
		return prefill.New(next, nil, cfg), met
	}
	return prefill.New(next, d, cfg), met
}

type decider interface {
	Decide(*backend.Request) (*backend.Placement, error)
}

// fixedOverlap is a decode router that finds overlap cached blocks.
type fixedOverlap uint32

func (o fixedOverlap) Decide(*backend.Request) (*backend.Placement, error) {
	n := uint32(o)
	return &backend.Placement{WorkerID: 1, OverlapBlocks: &n}, nil
}

func count(t *testing.T, met *prefill.Metrics, decision string) int {
	t.Helper()
	return int(testutil.ToFloat64(prefill.DecisionsCounter(met).WithLabelValues("demo", decision)))
}

func tokens(outs []*backend.Output) []uint32 {
	var ids []uint32
	for _, o := range outs {
		ids = append(ids, o.TokenIDs...)
	}
	return ids
}

// The synchronous handoff: the prefill worker gets the prompt with
// max_tokens 1; the decode worker gets the original max_tokens with the
// prefill's disaggregated_params, its cached tokens, the link to its
// engine span and the decode overrides; the outputs name both workers.
func TestSyncHandoff(t *testing.T) {
	f := newFleet(t)
	f.addPrefill(t, prefillWorker{})
	f.addPrefill(t, prefillWorker{})
	dec := f.addDecode(t)
	s, met := newStage(t, f, 1, prefill.Config{DecodeOverrides: true}, nil)
	s.SetPool(f.pool(t, 2))
	if !s.Active() {
		t.Fatal("stage inactive with two prefill workers")
	}
	req := request(40, 5)
	req.RouterConfigOverride = json.RawMessage(`{"router_temperature":0.5}`)
	outs, err := run(t, s, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := tokens(outs); len(got) != 5 {
		t.Fatalf("decoded %v, want 5 tokens", got)
	}
	pre, decs := f.requests()
	if len(pre) != 1 || len(decs) != 1 {
		t.Fatalf("%d prefill and %d decode requests, want 1 and 1", len(pre), len(decs))
	}
	if pre[0].MaxTokens(0) != 1 || pre[0].PrefillResult != nil || pre[0].BootstrapInfo != nil || pre[0].RouterConfigOverride != nil {
		t.Errorf("prefill request: max_tokens %d, prefill_result %v, bootstrap %v, override %s; want 1 and none",
			pre[0].MaxTokens(0), pre[0].PrefillResult, pre[0].BootstrapInfo, pre[0].RouterConfigOverride)
	}
	d := decs[0]
	if d.MaxTokens(0) != 5 || d.PrefillResult == nil || d.BootstrapInfo != nil {
		t.Fatalf("decode request: max_tokens %d, prefill_result %+v, bootstrap %+v; want 5 and a prefill result", d.MaxTokens(0), d.PrefillResult, d.BootstrapInfo)
	}
	var params backend.DisaggregatedParams
	if err := json.Unmarshal(d.PrefillResult.DisaggregatedParams, &params); err != nil || params.WorkerID == nil {
		t.Fatalf("disaggregated_params %s: %v", d.PrefillResult.DisaggregatedParams, err)
	}
	prefilled := params.WorkerID.PrefillWorkerID
	if string(d.PrefillResult.PromptTokensDetails) != `{"cached_tokens":16}` {
		t.Errorf("prompt_tokens_details %s, want the prefill's", d.PrefillResult.PromptTokensDetails)
	}
	if d.MigrationLink == nil || d.MigrationLink.SpanID == "" {
		t.Errorf("decode request carries no link to the prefill's engine span")
	}
	var o map[string]any
	if err := json.Unmarshal(d.RouterConfigOverride, &o); err != nil || o["overlap_score_weight"] != 0.0 || o["assume_kv_reuse"] != false || o["router_temperature"] != 0.5 {
		t.Errorf("decode router_config_override %s, want overlap weight 0, no KV reuse, the request's temperature kept", d.RouterConfigOverride)
	}
	if d.Routing == nil || d.Routing.PrefillWorkerID == nil || *d.Routing.PrefillWorkerID != prefilled {
		t.Errorf("decode routing %+v does not name the prefill worker %x", d.Routing, prefilled)
	}
	for _, out := range outs {
		p := out.Placement
		if p == nil || p.WorkerID != dec || p.PrefillWorkerID == nil || *p.PrefillWorkerID != prefilled {
			t.Fatalf("output placement %+v, want decode %x and prefill %x", p, dec, prefilled)
		}
	}
	if count(t, met, prefill.DecisionRemote) != 1 {
		t.Errorf("remote decisions %d, want 1", count(t, met, prefill.DecisionRemote))
	}
}

// The bootstrap handoff: both requests carry the same room and the
// chosen prefill worker's bootstrap address; the decode request goes out
// without waiting for the prefill and carries no prefill result.
func TestBootstrapHandoff(t *testing.T) {
	f := newFleet(t)
	f.addPrefill(t, prefillWorker{bootstrap: true})
	f.addPrefill(t, prefillWorker{bootstrap: true})
	f.addDecode(t)
	s, met := newStage(t, f, 1, prefill.Config{}, nil)
	pl := f.pool(t, 2)
	s.SetPool(pl)
	for i := range 2 {
		outs, err := run(t, s, request(40, 3))
		if err != nil {
			t.Fatal(err)
		}
		if len(tokens(outs)) != 3 {
			t.Fatalf("request %d: decoded %v", i, tokens(outs))
		}
	}
	pre, decs := f.requests()
	if len(pre) != 2 || len(decs) != 2 {
		t.Fatalf("%d prefill and %d decode requests, want 2 and 2", len(pre), len(decs))
	}
	rooms := map[uint64]bool{}
	for i := range pre {
		p, d := pre[i], decs[i]
		if p.BootstrapInfo == nil || d.BootstrapInfo == nil || *p.BootstrapInfo != *d.BootstrapInfo {
			t.Fatalf("request %d: bootstrap info %+v (prefill) and %+v (decode), want the same", i, p.BootstrapInfo, d.BootstrapInfo)
		}
		if p.Routing == nil || p.Routing.BackendInstanceID == nil {
			t.Fatalf("request %d: prefill request not pinned to the chosen worker", i)
		}
		host, port, _ := pl.Bootstrap(*p.Routing.BackendInstanceID)
		if p.BootstrapInfo.Host != host || p.BootstrapInfo.Port != port {
			t.Errorf("request %d: bootstrap %s:%d, want the chosen worker's %s:%d", i, p.BootstrapInfo.Host, p.BootstrapInfo.Port, host, port)
		}
		rooms[p.BootstrapInfo.Room] = true
		if p.MaxTokens(0) != 1 || d.MaxTokens(0) != 3 || d.PrefillResult != nil {
			t.Errorf("request %d: max_tokens %d/%d, prefill_result %v; want 1/3 and none", i, p.MaxTokens(0), d.MaxTokens(0), d.PrefillResult)
		}
	}
	if len(rooms) != 2 {
		t.Errorf("two requests shared a room")
	}
	if *pre[0].Routing.BackendInstanceID == *pre[1].Routing.BackendInstanceID {
		t.Errorf("both prefills went to one worker; round-robin should alternate")
	}
	if count(t, met, prefill.DecisionRemote) != 2 {
		t.Errorf("remote decisions %d, want 2", count(t, met, prefill.DecisionRemote))
	}
}

// Without prefill workers the stage passes the request on untouched;
// with --enforce-disagg it refuses it with a 503-class error. A pool
// whose workers all left falls back.
func TestNoPrefillWorkers(t *testing.T) {
	f := newFleet(t)
	f.addDecode(t)
	s, met := newStage(t, f, 1, prefill.Config{}, nil)
	if s.Active() {
		t.Fatal("active without a pool")
	}
	req := request(40, 2)
	if _, err := run(t, s, req); err != nil {
		t.Fatal(err)
	}
	_, decs := f.requests()
	if len(decs) != 1 || decs[0].PrefillResult != nil || decs[0].BootstrapInfo != nil || decs[0].RouterConfigOverride != nil {
		t.Fatalf("decode requests %+v, want the bare request", decs)
	}
	for _, d := range []string{prefill.DecisionRemote, prefill.DecisionFallback, prefill.DecisionRefused, prefill.DecisionLocal} {
		if n := count(t, met, d); n != 0 {
			t.Errorf("%s decisions %d for a model never disaggregated, want 0", d, n)
		}
	}

	enforced, met2 := newStage(t, f, 1, prefill.Config{Enforce: true}, nil)
	_, err := run(t, enforced, req)
	if !errors.Is(err, prefill.ErrNoPrefillWorkers) || !errors.Is(err, router.ErrNoInstances) {
		t.Fatalf("enforced without prefill workers: %v, want ErrNoPrefillWorkers (router.ErrNoInstances)", err)
	}
	if _, decs := f.requests(); len(decs) != 1 {
		t.Errorf("an enforced refusal sent a decode request")
	}
	if count(t, met2, prefill.DecisionRefused) != 1 {
		t.Errorf("refused decisions %d, want 1", count(t, met2, prefill.DecisionRefused))
	}

	s.SetPool(emptyPool{})
	if _, err := run(t, s, req); err != nil {
		t.Fatal(err)
	}
	if count(t, met, prefill.DecisionFallback) != 1 {
		t.Errorf("fallback decisions %d with no prefill worker available, want 1", count(t, met, prefill.DecisionFallback))
	}
}

// emptyPool is a pool whose workers all left.
type emptyPool struct{}

func (emptyPool) Generate(context.Context, *backend.Request, func(*backend.Output) error) error {
	return router.ErrNoInstances
}
func (emptyPool) Available() []uint64 { return nil }
func (emptyPool) Pick(*backend.Request) (*backend.Placement, error) {
	return nil, router.ErrNoInstances
}
func (emptyPool) Bootstrap(uint64) (string, int, bool) { return "", 0, false }

// A prefill worker that dies mid-prefill: the prefill is retried on
// another prefill worker, within the retry budget; when none works the
// request falls back to decode-only, or fails when enforced.
func TestPrefillFailure(t *testing.T) {
	t.Run("retry", func(t *testing.T) {
		f := newFleet(t)
		f.addPrefill(t, prefillWorker{crash: true})
		f.addPrefill(t, prefillWorker{})
		f.addDecode(t)
		s, met := newStage(t, f, 1, prefill.Config{Retries: 1}, nil)
		s.SetPool(f.pool(t, 2))
		for range 2 { // one of the two requests meets the crashing worker first
			if _, err := run(t, s, request(40, 2)); err != nil {
				t.Fatal(err)
			}
		}
		_, decs := f.requests()
		for i, d := range decs {
			if d.PrefillResult == nil {
				t.Errorf("decode request %d has no prefill result: the retry should have prefilled remotely", i)
			}
		}
		if count(t, met, prefill.DecisionRemote) != 2 || count(t, met, prefill.DecisionFallback) != 0 {
			t.Errorf("remote %d, fallback %d; want 2 and 0", count(t, met, prefill.DecisionRemote), count(t, met, prefill.DecisionFallback))
		}
	})
	t.Run("fallback", func(t *testing.T) {
		f := newFleet(t)
		f.addPrefill(t, prefillWorker{crash: true})
		f.addPrefill(t, prefillWorker{crash: true})
		f.addPrefill(t, prefillWorker{crash: true})
		f.addDecode(t)
		s, met := newStage(t, f, 1, prefill.Config{Retries: 1}, nil)
		s.SetPool(f.pool(t, 3))
		outs, err := run(t, s, request(40, 3))
		if err != nil {
			t.Fatal(err)
		}
		pre, decs := f.requests()
		if len(pre) != 2 {
			t.Errorf("%d prefill attempts, want 2 (1 + 1 retry)", len(pre))
		}
		if len(decs) != 1 || decs[0].PrefillResult != nil || decs[0].MaxTokens(0) != 3 {
			t.Fatalf("decode requests %+v, want one bare request", decs)
		}
		if len(tokens(outs)) != 3 || outs[0].Placement.PrefillWorkerID != nil {
			t.Errorf("outputs %v, placement %+v: want 3 tokens decoded and prefilled by the decode worker", tokens(outs), outs[0].Placement)
		}
		if count(t, met, prefill.DecisionFallback) != 1 {
			t.Errorf("fallback decisions %d, want 1", count(t, met, prefill.DecisionFallback))
		}
	})
	t.Run("enforced", func(t *testing.T) {
		f := newFleet(t)
		f.addPrefill(t, prefillWorker{crash: true})
		f.addDecode(t)
		s, met := newStage(t, f, 1, prefill.Config{Enforce: true}, nil)
		s.SetPool(f.pool(t, 1))
		_, err := run(t, s, request(40, 3))
		if !errors.Is(err, prefill.ErrPrefillFailed) || !errors.Is(err, router.ErrNoInstances) || runtime.IsInstanceFault(err) {
			t.Fatalf("enforced, the prefill worker crashed: %v; want ErrPrefillFailed (a 503, not migrated again)", err)
		}
		if !strings.Contains(err.Error(), "Stream ended before generation completed") {
			t.Errorf("the error %q does not say what the prefill's last failure was", err)
		}
		if _, decs := f.requests(); len(decs) != 0 {
			t.Errorf("%d decode requests, want none", len(decs))
		}
		if count(t, met, prefill.DecisionRefused) != 1 {
			t.Errorf("refused decisions %d, want 1", count(t, met, prefill.DecisionRefused))
		}
	})
}

// A client that goes away during the prefill: the prefill worker sees its
// request stopped (through the request's linked children) and no decode
// request is sent, in both handoffs... except that the bootstrap handoff
// sends its decode request at once, which is stopped too.
func TestClientGoneDuringPrefill(t *testing.T) {
	for _, bootstrap := range []bool{false, true} {
		name := "sync"
		if bootstrap {
			name = "bootstrap"
		}
		t.Run(name, func(t *testing.T) {
			f := newFleet(t)
			started, stopped := make(chan struct{}), make(chan struct{})
			f.addPrefill(t, prefillWorker{bootstrap: bootstrap, block: started, stopped: stopped})
			f.addDecode(t)
			s, _ := newStage(t, f, 1, prefill.Config{}, nil)
			s.SetPool(f.pool(t, 1))
			rc := runtime.NewContext(t.Context(), "")
			defer rc.Release()
			errc := make(chan error, 1)
			go func() { errc <- s.Generate(rc, request(40, 3), func(*backend.Output) error { return nil }) }()
			<-started
			rc.Kill() // the HTTP layer kills a request whose client left
			select {
			case <-stopped:
			case <-time.After(5 * time.Second):
				t.Fatal("the prefill worker never saw its request stopped")
			}
			if err := <-errc; err == nil {
				t.Fatal("a request whose client left during its prefill succeeded")
			}
			_, decs := f.requests()
			if !bootstrap && len(decs) != 0 {
				t.Errorf("%d decode requests after the client left during the prefill, want none", len(decs))
			}
		})
	}
}

// Conditional disaggregation (IslBounding): a prompt mostly cached on the
// decode worker is prefilled there; a long one is not; off, nothing is
// kept local.
func TestConditional(t *testing.T) {
	f := newFleet(t)
	f.addPrefill(t, prefillWorker{})
	f.addDecode(t)
	cond := prefill.Config{BlockSize: 16, Conditional: prefill.Conditional{Enabled: true}}
	s, met := newStage(t, f, 1, cond, fixedOverlap(8)) // 128 tokens cached
	s.SetPool(f.pool(t, 1))
	cases := []struct {
		prompt int
		remote bool
	}{
		{160, false}, // eff 32 < 2048, ratio 0.2 < 0.7: local
		{200, false}, // eff 72, ratio 0.36: local
		{4000, true}, // eff 3872 >= 2048: remote
	}
	for _, c := range cases {
		before, _ := f.requests()
		if _, err := run(t, s, request(c.prompt, 2)); err != nil {
			t.Fatal(err)
		}
		after, _ := f.requests()
		if got := len(after) > len(before); got != c.remote {
			t.Errorf("prompt %d with 128 tokens cached: remote prefill %v, want %v", c.prompt, got, c.remote)
		}
	}
	if count(t, met, prefill.DecisionLocal) != 2 || count(t, met, prefill.DecisionRemote) != 1 {
		t.Errorf("local %d, remote %d; want 2 and 1", count(t, met, prefill.DecisionLocal), count(t, met, prefill.DecisionRemote))
	}
	// Without KV routing the overlap is 0: the ratio is 1, never local.
	s2, _ := newStage(t, f, 1, cond, nil)
	s2.SetPool(f.pool(t, 1))
	before, _ := f.requests()
	if _, err := run(t, s2, request(100, 2)); err != nil {
		t.Fatal(err)
	}
	if after, _ := f.requests(); len(after) != len(before)+1 {
		t.Errorf("without overlap a short prompt was kept local")
	}
}

// A request migration resumes after its decode worker failed goes
// decode-only: the new decode worker recomputes the prompt and the tokens
// so far.
func TestResumedRequestGoesDecodeOnly(t *testing.T) {
	f := newFleet(t)
	f.addPrefill(t, prefillWorker{})
	f.addDecode(t)
	s, _ := newStage(t, f, 1, prefill.Config{}, nil)
	s.SetPool(f.pool(t, 1))
	req := request(40, 2)
	req.MigratedTokens = 3
	if _, err := run(t, s, req); err != nil {
		t.Fatal(err)
	}
	pre, decs := f.requests()
	if len(pre) != 0 || len(decs) != 1 || decs[0].PrefillResult != nil {
		t.Errorf("%d prefills, decode requests %+v; want none and one bare request", len(pre), decs)
	}
}
