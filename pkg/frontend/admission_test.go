package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// TestSaturatedModelQueuesThenRefuses fills the one worker's 8 slots
// (its max_num_seqs), queues one more request, and refuses the next at
// once: 503 with Retry-After, in the OpenAI error shape. The queued one
// is refused when it has waited the queue timeout; /health stays 200;
// the slots' streams finish whole.
func TestSaturatedModelQueuesThenRefuses(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{Queue: &pipeline.QueueConfig{Max: 1, Timeout: 300 * time.Millisecond}})
	eng := helloEngine(t, 20*time.Millisecond)
	eng.seen = make(chan string, 64)
	s.addWorker(t, "demo", eng)

	const long = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"stream":true}`
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range 8 {
		wg.Go(func() { statuses[i] = s.post(t, "/v1/chat/completions", long).status })
	}
	for range 8 {
		select {
		case <-eng.seen:
		case <-time.After(10 * time.Second):
			t.Fatal("the 8 slots were not taken")
		}
	}
	queued := make(chan response, 1)
	start := time.Now()
	go func() { queued <- s.post(t, "/v1/chat/completions", long) }()
	testenv.WaitFor(t, 10*time.Second, "one request in the queue", func() bool {
		return strings.Contains(string(s.get(t, "/metrics").body), `dynamo_frontend_router_queue_pending_requests{model="demo"} 1`)
	})

	r := s.post(t, "/v1/chat/completions", long)
	if r.status != http.StatusServiceUnavailable || !strings.Contains(errorInfo(t, r.body).Message, "the queue is full (1 waiting)") {
		t.Fatalf("a request at the full queue: %d %s", r.status, r.body)
	}
	if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 {
		t.Errorf("Retry-After %q, want a whole number of seconds, at least 1", r.header.Get("Retry-After"))
	}
	if h := s.get(t, "/health"); h.status != http.StatusOK {
		t.Errorf("/health under overload: %d %s", h.status, h.body)
	}

	q := <-queued
	if q.status != http.StatusServiceUnavailable || !strings.Contains(errorInfo(t, q.body).Message, "in the queue") || q.header.Get("Retry-After") == "" {
		t.Errorf("the queued request: %d %v %s", q.status, q.header, q.body)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond || waited > 5*time.Second {
		t.Errorf("the queued request was refused after %v, want the 300 ms timeout", waited)
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusOK {
			t.Errorf("stream %d: %d", i, st)
		}
	}
	metrics := string(s.get(t, "/metrics").body)
	for _, want := range []string{
		`dynamo_frontend_router_queue_rejected_total{model="demo",reason="queue_full"} 1`,
		`dynamo_frontend_router_queue_rejected_total{model="demo",reason="queue_timeout"} 1`,
		`dynamo_frontend_router_queue_pending_requests{model="demo"} 0`,
		`dynamo_frontend_router_saturated_workers{model="demo"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A slot is free again: a request is answered.
	if r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`); r.status != http.StatusOK {
		t.Errorf("after the burst: %d %s", r.status, r.body)
	}
}

// gateEngine holds every request's first token until open is closed:
// its prompts stay in prefill as long as the test wants. With
// afterFirst, it holds the stream after the first token instead.
type gateEngine struct {
	open       chan struct{}
	seen       chan string
	seqs       int // max_num_seqs; 0 is 8
	afterFirst bool
	id         atomic.Uint64 // the worker's instance id
}

func (e *gateEngine) Start(_ context.Context, id uint64) (backend.Config, error) {
	e.id.Store(id)
	seqs := e.seqs
	if seqs == 0 {
		seqs = 8
	}
	return backend.Config{Model: "demo", ContextLength: 4096, KVBlockSize: 16, TotalKVBlocks: 1000, MaxNumSeqs: seqs}, nil
}

func (e *gateEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	e.seen <- backend.RequestID(ctx)
	if e.afterFirst {
		if err := emit(backend.Tokens(39)); err != nil {
			return err
		}
	}
	select {
	case <-e.open:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if e.afterFirst {
		return emit(backend.Length(39).WithUsage(len(req.TokenIDs), 2))
	}
	for range req.MaxTokens(2) - 1 {
		if err := emit(backend.Tokens(39)); err != nil {
			return err
		}
	}
	return emit(backend.Length().WithUsage(len(req.TokenIDs), req.MaxTokens(2)))
}

func (e *gateEngine) Cleanup(context.Context) error { return nil }

// The KV router's prefill-token busy threshold, set at run time through
// POST /busy_threshold, saturates a worker whose routed prompts are not
// prefilled yet: the next request waits in the admission queue until the
// first one's first token, then is served.
func TestPrefillTokensThresholdQueues(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{RouterMode: pipeline.RouterKV, Queue: &pipeline.QueueConfig{Max: 4, Timeout: 10 * time.Second}})
	eng := &gateEngine{open: make(chan struct{}), seen: make(chan string, 4)}
	s.addWorker(t, "demo", eng)
	if r := s.post(t, "/busy_threshold", `{"model":"demo","active_prefill_tokens_threshold":0}`); r.status != http.StatusOK {
		t.Fatalf("POST /busy_threshold: %d %s", r.status, r.body)
	}
	const req = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	first, second := make(chan response, 1), make(chan response, 1)
	go func() { first <- s.post(t, "/v1/chat/completions", req) }()
	<-eng.seen // the first prompt is in prefill on the only worker
	go func() { second <- s.post(t, "/v1/chat/completions", req) }()
	testenv.WaitFor(t, 10*time.Second, "one request in the queue", func() bool {
		return strings.Contains(string(s.get(t, "/metrics").body), `dynamo_frontend_router_queue_pending_requests{model="demo"} 1`)
	})
	select {
	case id := <-eng.seen:
		t.Fatalf("request %s reached the worker while its prefill tokens were over the threshold", id)
	case <-time.After(300 * time.Millisecond):
	}
	close(eng.open) // the first request's first token: its prefill is done
	for _, c := range []chan response{first, second} {
		if r := <-c; r.status != http.StatusOK {
			t.Errorf("a request: %d %s", r.status, r.body)
		}
	}
	if !strings.Contains(string(s.get(t, "/metrics").body), `dynamo_frontend_router_queue_pending_requests{model="demo"} 0`) {
		t.Error("the queue did not drain")
	}
}

// Overload refusals are counted per model and endpoint
// (model_rejection_total) and by reason (router_queue_rejected_total,
// tenant_limit for a tenant's 429), and carry Retry-After whatever the
// overload status is (DYN_HTTP_OVERLOAD_STATUS_CODE, here 529).
func TestOverloadRefusalsCountedWithRetryAfter(t *testing.T) {
	s := newStack(t, Config{OverloadStatus: 529, TenantMaxInflight: 1}, pipeline.Config{Queue: &pipeline.QueueConfig{Max: 0}})
	eng := &gateEngine{open: make(chan struct{}), seen: make(chan string, 16)}
	s.addWorker(t, "demo", eng)
	const body = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	post := func(tenant string) response {
		req, err := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return response{}
		}
		req.Header.Set("Content-Type", "application/json")
		if tenant != "" {
			req.Header.Set("x-dynamo-tenant", tenant)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return response{}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, b}
	}
	var wg sync.WaitGroup
	held := make([]response, 8)
	for i := range 8 { // the worker's 8 slots; one of them tenant a's
		tenant := ""
		if i == 0 {
			tenant = "a"
		}
		wg.Go(func() { held[i] = post(tenant) })
		<-eng.seen
	}
	tenant := post("a")
	overload := post("")
	close(eng.open)
	wg.Wait()
	if tenant.status != http.StatusTooManyRequests || tenant.header.Get("Retry-After") == "" {
		t.Errorf("tenant a's second request: %d, Retry-After %q; want 429 with Retry-After", tenant.status, tenant.header.Get("Retry-After"))
	}
	if n, err := strconv.Atoi(overload.header.Get("Retry-After")); overload.status != 529 || err != nil || n < 1 {
		t.Errorf("a request to the saturated model: %d, Retry-After %q; want 529 with Retry-After", overload.status, overload.header.Get("Retry-After"))
	}
	for i, r := range held {
		if r.status != http.StatusOK {
			t.Errorf("held request %d: %d %s", i, r.status, r.body)
		}
	}
	metrics := string(s.get(t, "/metrics").body)
	for _, want := range []string{
		`dynamo_frontend_model_rejection_total{endpoint="chat_completions",model="demo"} 2`,
		`dynamo_frontend_router_queue_rejected_total{model="demo",reason="tenant_limit"} 1`,
		`dynamo_frontend_router_queue_rejected_total{model="demo",reason="queue_full"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// In router mode kv, the KV router picks among the workers admission
// finds unsaturated: prompts sharing a prefix follow the worker that
// holds it until it is full (max_num_seqs), and the next one goes to the
// other worker, although the prefix makes the full one cheaper.
func TestKVRoutingSkipsSaturatedWorkers(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{RouterMode: pipeline.RouterKV, Queue: &pipeline.QueueConfig{Max: 4, Timeout: 10 * time.Second}})
	open := make(chan struct{})
	engines := []*gateEngine{{open: open, seen: make(chan string, 8), seqs: 2, afterFirst: true}, {open: open, seen: make(chan string, 8), seqs: 2, afterFirst: true}}
	for _, eng := range engines {
		rt := startRuntime(t, s.mem)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- worker.Run(ctx, rt, eng, worker.Config{
				Endpoint:  runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"},
				ModelPath: demoModel, ModelName: "demo",
			})
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	testenv.WaitFor(t, 10*time.Second, "two instances in /health", func() bool {
		var health struct {
			Instances []any `json:"instances"`
		}
		_ = json.Unmarshal(s.get(t, "/health").body, &health)
		return len(health.Instances) == 2
	})
	prefix := strings.Repeat("Sphinx of black quartz, judge my vow. ", 40)
	results := make(chan response, 3)
	send := func(suffix string) int { // the engine that got it
		b, _ := json.Marshal(map[string]any{"model": "demo", "prompt": prefix + suffix, "max_tokens": 2})
		go func() { results <- s.post(t, "/v1/completions", string(b)) }()
		select {
		case <-engines[0].seen:
			return 0
		case <-engines[1].seen:
			return 1
		case <-time.After(10 * time.Second):
			t.Fatal("a request reached no worker")
			return -1
		}
	}
	prefilled := func(w int) {
		t.Helper()
		gauge := fmt.Sprintf(`dynamo_frontend_worker_active_prefill_tokens{dp_rank="0",worker_id="%d",worker_type="decode"} 0`, engines[w].id.Load())
		testenv.WaitFor(t, 10*time.Second, "the worker's prefill tokens back to 0", func() bool { return strings.Contains(string(s.get(t, "/metrics").body), gauge) })
	}
	holder := send("one")
	prefilled(holder) // its first token is back: the prefix is cached there
	if got := send("two"); got != holder {
		t.Fatalf("the second prompt with the prefix went to worker %d, the first to %d: want the prefix followed", got, holder)
	}
	prefilled(holder)
	if got := send("three"); got == holder {
		t.Errorf("the third prompt went to the worker holding the prefix, which had its max_num_seqs (2) requests in flight; want the other")
	}
	close(open)
	for range 3 {
		if r := <-results; r.status != http.StatusOK {
			t.Errorf("a request: %d %s", r.status, r.body)
		}
	}
}
