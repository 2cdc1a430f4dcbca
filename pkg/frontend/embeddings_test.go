package frontend

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// vecEngine is an embedding engine of 4 dimensions: input ids get
// [len(ids), ids[0], 0, 0] (or its first Dimensions components); more
// than 4 dimensions are an invalid argument.
type vecEngine struct{}

func (vecEngine) Start(context.Context, uint64) (backend.Config, error) {
	return backend.Config{Model: "emb", ContextLength: 64, KVBlockSize: 16, TotalKVBlocks: 100, MaxNumSeqs: 8}, nil
}

func (vecEngine) Generate(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if req.Embedding == nil {
		return emit(backend.Length().WithUsage(len(req.TokenIDs), 0))
	}
	v := []float64{float64(len(req.TokenIDs)), float64(req.TokenIDs[0]), 0, 0}
	if d := req.Embedding.Dimensions; d != nil {
		if *d > len(v) {
			return fmt.Errorf("%w: dimensions %d: the model's embeddings have at most %d", backend.ErrInvalidArgument, *d, len(v))
		}
		v = v[:*d]
	}
	out := backend.Stop().WithUsage(len(req.TokenIDs), 0)
	out.Embedding = v
	return emit(out)
}

func (vecEngine) Cleanup(context.Context) error { return nil }

// addEmbeddingWorker starts a worker serving the demo model's files as
// the embedding model name.
func (s *stack) addEmbeddingWorker(t *testing.T, name string) {
	t.Helper()
	rt := startRuntime(t, s.mem)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, rt, vecEngine{}, worker.Config{
			Endpoint:  runtime.EndpointID{Namespace: "dynamo", Component: "backend-" + name, Name: "generate"},
			ModelPath: demoModel, ModelName: name, ModelTypes: []string{"embedding"},
		})
	}()
	s.workers[name], s.done[name] = cancel, done
	s.waitModels(t, func(ids []string) bool { return contains(ids, name) })
}

type embeddingBody struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Embedding json.RawMessage `json:"embedding"`
		Index     int             `json:"index"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func TestEmbeddingsThroughTheStack(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addEmbeddingWorker(t, "emb")
	s.addWorker(t, "demo", helloEngine(t, 0))

	t.Run("a list of token id lists, float", func(t *testing.T) {
		r := s.post(t, "/v1/embeddings", `{"model":"emb","input":[[5,6,7],[9]],"user":"u"}`)
		if r.status != 200 || r.header.Get("x-request-id") == "" {
			t.Fatalf("status %d body %s", r.status, r.body)
		}
		var b embeddingBody
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Object != "list" || b.Model != "emb" || len(b.Data) != 2 || b.Usage.PromptTokens != 4 || b.Usage.TotalTokens != 4 {
			t.Fatalf("body %s: want a list from emb of two embeddings and 4 prompt and total tokens", r.body)
		}
		for i, want := range []string{"[3,5,0,0]", "[1,9,0,0]"} {
			if d := b.Data[i]; d.Object != "embedding" || d.Index != i || string(d.Embedding) != want {
				t.Errorf("data[%d] %+v (embedding %s), want embedding %s at index %d", i, d, d.Embedding, want, i)
			}
		}
	})

	t.Run("a string, base64, fewer dimensions", func(t *testing.T) {
		r := s.post(t, "/v1/embeddings", `{"model":"emb","input":"Hello","encoding_format":"base64","dimensions":2}`)
		if r.status != 200 {
			t.Fatalf("status %d body %s", r.status, r.body)
		}
		var b embeddingBody
		var enc string
		if err := json.Unmarshal(r.body, &b); err != nil || len(b.Data) != 1 || json.Unmarshal(b.Data[0].Embedding, &enc) != nil {
			t.Fatalf("body %s: want one embedding as a base64 string", r.body)
		}
		raw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(raw) != 8 {
			t.Fatalf("embedding %q: %d bytes (%v), want 2 float32s", enc, len(raw), err)
		}
		n := b.Usage.PromptTokens
		got := []float32{math.Float32frombits(binary.LittleEndian.Uint32(raw)), math.Float32frombits(binary.LittleEndian.Uint32(raw[4:]))}
		if n == 0 || got[0] != float32(n) {
			t.Errorf("decoded %v with %d prompt tokens; want the input's token count first", got, n)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, body string
			status           int
			param, phrase    string
		}{
			{"dimensions above the model's", "/v1/embeddings", `{"model":"emb","input":"x","dimensions":9}`, 400, "dimensions", "dimensions 9"},
			{"no dimensions", "/v1/embeddings", `{"model":"emb","input":"x","dimensions":0}`, 400, "dimensions", "at least 1"},
			{"empty input", "/v1/embeddings", `{"model":"emb","input":[]}`, 400, "input", "must not be empty"},
			{"over the context", "/v1/embeddings", `{"model":"emb","input":[[1],[` + strings.TrimSuffix(strings.Repeat("1,", 65), ",") + `]]}`, 400, "input[1]", "maximum context length is 64 tokens. However, your input[1] resulted in 65 tokens"},
			{"outside the vocabulary", "/v1/embeddings", `{"model":"emb","input":[1,600]}`, 400, "input", "out of range"},
			{"unknown field", "/v1/embeddings", `{"model":"emb","input":"x","max_tokens":3}`, 400, "max_tokens", "Unsupported parameter"},
			{"a chat model", "/v1/embeddings", `{"model":"demo","input":"x"}`, 404, "", "Model not found"},
			{"chat on the embedding model", "/v1/chat/completions", `{"model":"emb","messages":[{"role":"user","content":"hi"}]}`, 404, "", "Model not found"},
			{"unknown model", "/v1/embeddings", `{"model":"nope","input":"x"}`, 404, "", "nope"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.post(t, tc.path, tc.body)
				if r.status != tc.status {
					t.Fatalf("status %d body %s, want %d", r.status, r.body, tc.status)
				}
				e := errorInfo(t, r.body)
				param := ""
				if e.Param != nil {
					param = *e.Param
				}
				if param != tc.param || !strings.Contains(e.Message, tc.phrase) {
					t.Errorf("param %q message %q; want param %q and %q", param, e.Message, tc.param, tc.phrase)
				}
			})
		}
	})

	t.Run("listed, in health and in the metrics", func(t *testing.T) {
		if ids := s.models(t); !slices.Equal(slices.Sorted(slices.Values(ids)), []string{"demo", "emb"}) {
			t.Errorf("/v1/models lists %v, want demo and emb", ids)
		}
		var h healthBody
		if err := json.Unmarshal(s.get(t, "/health").body, &h); err != nil || !slices.Contains(h.Endpoints, "/v1/embeddings") {
			t.Errorf("/health endpoints %v (%v), want /v1/embeddings among them", h.Endpoints, err)
		}
		got := gather(t, s.reg)
		ok := labels("model", "emb", "endpoint", EndpointEmbeddings, "request_type", "unary", "status", "success", "error_type", "")
		bad := labels("model", "emb", "endpoint", EndpointEmbeddings, "request_type", "unary", "status", "error", "error_type", ErrValidation)
		if v := got["dynamo_frontend_requests_total"][ok].value; v != 2 {
			t.Errorf("successful embeddings requests counted %v, want 2", v)
		}
		if v := got["dynamo_frontend_requests_total"][bad].value; v != 3 {
			t.Errorf("embeddings requests refused after the model was found counted %v, want 3 (dimensions, context, vocabulary)", v)
		}
		if v := got["dynamo_frontend_inflight_requests"][labels("model", "emb")].value; v != 0 {
			t.Errorf("inflight_requests %v after the requests, want 0", v)
		}
	})
}
