package frontend

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// positionEngine generates the token for absolute sequence position p as
// ids[p % len(ids)], so a stream continued elsewhere from the tokens so far
// is the same stream. The first drops calls overall break after after
// tokens, like a worker that crashed (no final marker).
type positionEngine struct {
	ids   []uint32
	drops *atomic.Int32
	after int
	calls atomic.Int32
	id    atomic.Uint64 // the worker's instance id
}

func (e *positionEngine) Start(_ context.Context, id uint64) (backend.Config, error) {
	e.id.Store(id)
	return backend.Config{Model: "demo", ContextLength: 4096}, nil
}

func (e *positionEngine) Cleanup(context.Context) error { return nil }

func (e *positionEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	e.calls.Add(1)
	drop := e.drops.Add(-1) >= 0
	n := req.MaxTokens(16)
	for i := range n {
		if drop && i == e.after {
			return backend.ErrDropStream
		}
		id := e.ids[(len(req.TokenIDs)+i)%len(e.ids)]
		out := backend.Tokens(id)
		if i == n-1 {
			out = backend.Length(id)
		}
		if err := emit(out); err != nil {
			return err
		}
	}
	return nil
}

func startPositionWorkers(t *testing.T, s *stack, drops int32) []*positionEngine {
	t.Helper()
	shared := &atomic.Int32{}
	shared.Store(drops)
	var engines []*positionEngine
	for range 2 {
		eng := &positionEngine{ids: []uint32{39, 371, 78, 437, 299, 257, 70, 309}, drops: shared, after: 3}
		engines = append(engines, eng)
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
	var health struct {
		Instances []any `json:"instances"`
	}
	for len(health.Instances) < 2 {
		_ = json.Unmarshal(s.get(t, "/health").body, &health)
	}
	return engines
}

func TestMigrationContinuesABrokenStream(t *testing.T) {
	limit := 3
	s := newStack(t, Config{}, pipeline.Config{MigrationLimit: &limit})
	engines := startPositionWorkers(t, s, 1)
	reference := newStack(t, Config{}, pipeline.Config{})
	startPositionWorkers(t, reference, 0)

	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}`
	want := streamText(t, reference.post(t, "/v1/chat/completions", body).body)
	r := s.post(t, "/v1/chat/completions", body)
	got := streamText(t, r.body)
	if r.status != 200 || got.text != want.text || got.finish != "length" || !got.done || got.completion != 12 {
		t.Fatalf("migrated stream: status %d %+v, want the unbroken %+v", r.status, got, want)
	}
	if calls := engines[0].calls.Load() + engines[1].calls.Load(); calls != 2 {
		t.Errorf("workers were called %d times, want 2 (one failure, one continuation)", calls)
	}
	m := string(s.get(t, "/metrics").body)
	if !strings.Contains(m, `dynamo_frontend_model_migration_total{migration_type="ongoing_request",model="demo"} 1`) {
		t.Errorf("migration counter:\n%s", grepLines(m, "migration"))
	}
}

func TestNoMigrationGivesTheErrorEvent(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	startPositionWorkers(t, s, 1)
	r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":12,"stream":true}`)
	got := streamText(t, r.body)
	if r.status != 200 || got.done || !strings.Contains(string(r.body), "event: error") || !strings.Contains(string(r.body), runtime.MsgStreamEnded) {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	u := s.post(t, "/v1/completions", `{"model":"demo","prompt":"hi","max_tokens":12}`)
	if u.status != 200 {
		// The shared drop was used by the streaming request: this one succeeds.
		t.Fatalf("unary after the failure: %d %s", u.status, u.body)
	}
}

type streamed struct {
	text       string
	finish     string
	done       bool
	completion int
}

func streamText(t *testing.T, body []byte) streamed {
	t.Helper()
	chunks, done := sseData(t, body)
	out := streamed{done: done}
	var sb strings.Builder
	for _, c := range chunks {
		var ch openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(c), &ch); err != nil {
			continue
		}
		for _, choice := range ch.Choices {
			if choice.Delta.Content != nil {
				sb.WriteString(*choice.Delta.Content)
			}
			if choice.FinishReason != nil {
				out.finish = *choice.FinishReason
			}
		}
		if ch.Usage != nil {
			out.completion = ch.Usage.CompletionTokens
		}
	}
	out.text = sb.String()
	return out
}
