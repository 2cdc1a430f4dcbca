package frontend

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
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
	waitFor(t, func() bool {
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

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
