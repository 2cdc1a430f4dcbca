package preprocessor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// embedEngine answers an embedding request with [len(ids), ids[0]] after
// a delay that shrinks with ids[0] (so a batch finishes out of order),
// refuses first id fail with InvalidArgument, and records the request
// ids, the requests and the most requests it had at once.
type embedEngine struct {
	fail uint32

	mu      sync.Mutex
	ids     []string
	reqs    []*backend.Request
	now     atomic.Int32
	most    atomic.Int32
	aborted atomic.Int32
}

func (e *embedEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if req.Embedding == nil {
		return errors.New("not an embedding request")
	}
	rc, _ := runtime.FromContext(ctx)
	e.mu.Lock()
	e.ids = append(e.ids, rc.ID())
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	n := e.now.Add(1)
	defer e.now.Add(-1)
	for m := e.most.Load(); n > m && !e.most.CompareAndSwap(m, n); m = e.most.Load() {
	}
	first := req.TokenIDs[0]
	if e.fail != 0 && first == e.fail {
		return fmt.Errorf("%w: no", backend.ErrInvalidArgument)
	}
	select {
	case <-time.After(time.Duration(40-int(first)%40) * time.Millisecond):
	case <-ctx.Done():
		e.aborted.Add(1)
		return context.Cause(ctx)
	}
	out := backend.Stop().WithUsage(len(req.TokenIDs), 0)
	out.Embedding = []float64{float64(len(req.TokenIDs)), float64(first)}
	return emit(out)
}

func decodeEmbedding(t *testing.T, body string) *openai.EmbeddingRequest {
	t.Helper()
	r, err := openai.DecodeEmbedding([]byte(body), openai.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEmbedBatchInInputOrderWithBoundedConcurrency(t *testing.T) {
	m := demoModel(t)
	var inputs [][]uint32
	for i := range 30 {
		inputs = append(inputs, slices.Repeat([]uint32{uint32(i + 1)}, i%4+1))
	}
	body, _ := json.Marshal(map[string]any{"model": "demo", "input": inputs})
	eng := &embedEngine{}
	rc := runtime.NewContext(context.Background(), "emb")
	defer rc.Release()
	resp, err := m.Embed(rc, "emb", decodeEmbedding(t, string(body)), eng)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "list" || resp.Model != "demo" || len(resp.Data) != len(inputs) {
		t.Fatalf("object %q model %q with %d embeddings; want list, demo, %d", resp.Object, resp.Model, len(resp.Data), len(inputs))
	}
	tokens := 0
	for i, d := range resp.Data {
		want := []float32{float32(len(inputs[i])), float32(i + 1)}
		if d.Object != "embedding" || d.Index != i || !slices.Equal(d.Embedding.Values, want) || d.Embedding.Base64 {
			t.Errorf("data[%d] = %+v; want embedding %v at index %d", i, d, want, i)
		}
		tokens += len(inputs[i])
	}
	if resp.Usage != (openai.EmbeddingUsage{PromptTokens: tokens, TotalTokens: tokens}) {
		t.Errorf("usage %+v, want %d prompt and total tokens", resp.Usage, tokens)
	}
	if most := eng.most.Load(); most > EmbedConcurrency || most < 2 {
		t.Errorf("%d engine requests at once; want 2 to %d", most, EmbedConcurrency)
	}
	slices.Sort(eng.ids)
	var want []string
	for i := range inputs {
		want = append(want, fmt.Sprintf("emb-%d", i))
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, eng.ids); diff != "" {
		t.Errorf("request ids (-want +got):\n%s", diff)
	}
}

func TestEmbedOneInputRunsUnderTheRequestContext(t *testing.T) {
	m := demoModel(t)
	eng := &embedEngine{}
	rc := runtime.NewContext(context.Background(), "one")
	defer rc.Release()
	resp, err := m.Embed(rc, "one", decodeEmbedding(t, `{"model":"demo","input":"hello","dimensions":2,"encoding_format":"base64","nvext":{"backend_instance_id":9}}`), eng)
	if err != nil {
		t.Fatal(err)
	}
	ids := encodeIDs(t, m, "hello")
	if len(eng.ids) != 1 || eng.ids[0] != "one" {
		t.Errorf("request ids %v, want [one]", eng.ids)
	}
	r := eng.reqs[0]
	if !slices.Equal(r.TokenIDs, ids) || r.Embedding.Dimensions == nil || *r.Embedding.Dimensions != 2 ||
		r.Routing == nil || *r.Routing.BackendInstanceID != 9 || r.Model != "demo" || r.MDCSum == "" {
		t.Errorf("engine request %+v (embedding %+v); want the tokens %v, dimensions 2, instance 9, the model and its checksum", r, r.Embedding, ids)
	}
	if !resp.Data[0].Embedding.Base64 || resp.Usage.PromptTokens != len(ids) {
		t.Errorf("response %+v: want a base64 embedding and %d prompt tokens", resp, len(ids))
	}
}

// bosModel is the demo model whose tokenizer adds <|begin_of_text|> (id
// 509) to a sequence when asked for special tokens.
func bosModel(t *testing.T) *Model {
	t.Helper()
	dir := copyDir(t, "../../models/demo")
	path := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]json.RawMessage
	if err := json.Unmarshal(b, &tok); err != nil {
		t.Fatal(err)
	}
	tok["post_processor"] = json.RawMessage(`{"type":"TemplateProcessing",
		"single":[{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
		"pair":[{"Sequence":{"id":"A","type_id":0}},{"Sequence":{"id":"B","type_id":1}}],
		"special_tokens":{"<|begin_of_text|>":{"id":"<|begin_of_text|>","ids":[509],"tokens":["<|begin_of_text|>"]}}}`)
	if b, err = json.Marshal(tok); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return loadModel(t, dir, modelcard.Options{Name: "demo"})
}

func TestEmbedAddsSpecialTokensToText(t *testing.T) {
	m := bosModel(t)
	plain := encodeIDs(t, m, "hello")
	for _, tc := range []struct {
		body string
		want []uint32
	}{
		{`{"model":"demo","input":"hello"}`, append([]uint32{509}, plain...)},
		{`{"model":"demo","input":["hello"],"add_special_tokens":true}`, append([]uint32{509}, plain...)},
		{`{"model":"demo","input":"hello","add_special_tokens":false}`, plain},
		{`{"model":"demo","input":[5,6]}`, []uint32{5, 6}},
	} {
		reqs, err := m.PrepareEmbedding(decodeEmbedding(t, tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if !slices.Equal(reqs[0].TokenIDs, tc.want) || reqs[0].Embedding == nil {
			t.Errorf("%s: token ids %v (embedding %v), want %v", tc.body, reqs[0].TokenIDs, reqs[0].Embedding, tc.want)
		}
	}
}

func TestEmbedRefusesInputs(t *testing.T) {
	m := demoModel(t)
	long := "[" + strings.TrimSuffix(strings.Repeat("1,", 4097), ",") + "]"
	full := "[" + strings.TrimSuffix(strings.Repeat("1,", 4096), ",") + "]"
	for _, tc := range []struct {
		name, body      string
		param, contains string
	}{
		{"a token id outside the vocabulary", `{"model":"demo","input":[[1],[2,512]]}`, "input[1]", "token id 512 is out of range: the model's vocabulary has 512 tokens"},
		{"one token list over the context", `{"model":"demo","input":` + long + `}`, "input", "This model's maximum context length is 4096 tokens. However, your input resulted in 4097 tokens."},
		{"a text over the context", `{"model":"demo","input":["hi","` + strings.Repeat("word ", 5000) + `"]}`, "input[1]", "maximum context length is 4096 tokens. However, your input[1] resulted in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Embed(context.Background(), "x", decodeEmbedding(t, tc.body), &embedEngine{})
			var ve *openai.ValidationError
			if !errors.As(err, &ve) || ve.Param != tc.param || !strings.Contains(ve.Message, tc.contains) {
				t.Fatalf("error %v (param %v); want param %q and a message containing %q", err, ve, tc.param, tc.contains)
			}
		})
	}
	if _, err := m.PrepareEmbedding(decodeEmbedding(t, `{"model":"demo","input":`+full+`}`)); err != nil {
		t.Errorf("an input of exactly the context length: %v", err)
	}
}

func TestEmbedFirstFailureEndsTheBatch(t *testing.T) {
	m := demoModel(t)
	var inputs [][]uint32
	for i := range 40 {
		inputs = append(inputs, []uint32{uint32(i + 1)})
	}
	body, _ := json.Marshal(map[string]any{"model": "demo", "input": inputs})
	eng := &embedEngine{fail: 3}
	rc := runtime.NewContext(context.Background(), "batch")
	defer rc.Release()
	_, err := m.Embed(rc, "batch", decodeEmbedding(t, string(body)), eng)
	if !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("error %v, want the engine's invalid argument", err)
	}
	eng.mu.Lock()
	sent := len(eng.ids)
	eng.mu.Unlock()
	if sent == len(inputs) {
		t.Errorf("all %d inputs were sent after the third failed", sent)
	}
}

func TestEmbedEngineWithoutAnEmbedding(t *testing.T) {
	m := demoModel(t)
	noVec := backend.GeneratorFunc(func(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
		return emit(backend.Stop().WithUsage(len(req.TokenIDs), 0))
	})
	if _, err := m.Embed(context.Background(), "x", decodeEmbedding(t, `{"model":"demo","input":"hi"}`), noVec); !errors.Is(err, errNoEmbedding) {
		t.Errorf("error %v, want errNoEmbedding", err)
	}
}
