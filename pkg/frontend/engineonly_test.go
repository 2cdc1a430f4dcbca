package frontend

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// ownTextEngine stands for an engine that renders, tokenizes and
// detokenizes by itself (llama-server serving a GGUF file): a
// conversation is [1 2 3 4 5], a text one id per byte (+100) after a BOS
// (1) when special tokens are asked for; every output carries the
// engine's text ("Hello" " from" " llama"), and generation ends on the
// EOS id 2, which has no text. It records the tokenize requests.
type ownTextEngine struct {
	mu       sync.Mutex
	tokenize []backend.TokenizeRequest
}

func (e *ownTextEngine) TokenizeChat(_ context.Context, req *backend.TokenizeRequest) ([]uint32, error) {
	e.mu.Lock()
	e.tokenize = append(e.tokenize, *req)
	e.mu.Unlock()
	if req.Prompt == nil {
		return []uint32{1, 2, 3, 4, 5}, nil
	}
	var ids []uint32
	if req.AddSpecialTokens {
		ids = append(ids, 1)
	}
	for _, b := range []byte(*req.Prompt) {
		ids = append(ids, uint32(b)+100)
	}
	return ids, nil
}

func (e *ownTextEngine) Generate(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	for i, text := range []string{"Hello", " from", " llama"} {
		if err := emit(&backend.Output{TokenIDs: []uint32{uint32(21 + i)}, Text: &text}); err != nil {
			return err
		}
	}
	return emit(backend.EOS(2).WithUsage(len(req.TokenIDs), 4))
}

func (e *ownTextEngine) requests() []backend.TokenizeRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.tokenize)
}

// addEngineOnlyWorker starts a worker as one in front of llama-server
// serves its model: its card is built from what the engine reports
// (modelcard.FromEngine: no tokenizer, preprocessing and postprocessing
// "engine"), and it serves the generate, tokenize and files endpoints.
func (s *stack) addEngineOnlyWorker(t *testing.T, name string, eng *ownTextEngine) {
	t.Helper()
	card, err := modelcard.FromEngine(modelcard.EngineModel{
		ChatTemplate: "{% for m in messages %}{{ m.content }}{% endfor %}", BOSToken: "<s>", EOSToken: "</s>", EOSTokenIDs: []uint32{2},
	}, modelcard.Options{Name: name, Source: "/models/" + name + ".gguf", ContextLength: 4096,
		Runtime: modelcard.RuntimeConfig{Preprocessing: modelcard.ProcessingEngine, Postprocessing: modelcard.ProcessingEngine, TotalKVBlocks: 100, MaxNumSeqs: 8}})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range card.Files() {
		files[f.Checksum] = f.Bytes()
	}
	rt := startRuntime(t, s.mem)
	ep := runtime.EndpointID{Namespace: "dynamo", Component: "backend-" + name, Name: "generate"}
	handlers := map[string]runtime.HandlerFunc{
		ep.Name: func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
			var req backend.Request
			if err := json.Unmarshal(payload, &req); err != nil {
				return runtime.NewError(runtime.TypeInvalidArgument, "bad request: %v", err)
			}
			return eng.Generate(rc, &req, func(o *backend.Output) error {
				b, err := backend.AppendOutputJSON(nil, o)
				if err != nil {
					return err
				}
				return emit(b)
			})
		},
		backend.TokenizeEndpoint: func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
			var req backend.TokenizeRequest
			if err := json.Unmarshal(payload, &req); err != nil {
				return runtime.NewError(runtime.TypeInvalidArgument, "bad tokenize request: %v", err)
			}
			ids, err := eng.TokenizeChat(rc, &req)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(backend.TokenizeResponse{Tokens: ids})
			return emit(b)
		},
		modelcard.FilesEndpoint: func(_ *runtime.Context, payload []byte, emit func([]byte) error) error {
			var req modelcard.FileRequest
			if err := json.Unmarshal(payload, &req); err != nil {
				return err
			}
			b, ok := files[req.Checksum]
			if !ok {
				return runtime.NewError(runtime.TypeInvalidArgument, "no file %s", req.Checksum)
			}
			item, _ := json.Marshal(modelcard.FileChunk{Size: int64(len(b)), Data: b})
			return emit(item)
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for name, h := range handlers {
		id := ep
		id.Name = name
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = rt.Endpoint(id).Serve(ctx, h)
		}()
		client, err := rt.Endpoint(id).Client(ctx)
		if err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 10*time.Second, "endpoint "+id.Path()+" up", func() bool { return slices.Contains(client.Available(), rt.InstanceID()) })
	}
	done := make(chan error, 1)
	go func() { wg.Wait(); done <- nil }()
	s.workers[name], s.done[name] = cancel, done

	rec, err := modelcard.NewRecord(ep.Namespace, ep.Component, ep.Name, rt.InstanceID(), card)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	if err := rt.Store().Put(ctx, rec.Key(), b); err != nil {
		t.Fatal(err)
	}
	s.waitModels(t, func(ids []string) bool { return contains(ids, name) })
}

// A model whose card has no tokenizer (llama.cpp's native serving) is
// listed and served: chat and text completions are tokenized by the
// engine, through its worker, the answers are the engine's text, usage
// counts the engine's token ids, and what needs the tokenizer (logprobs)
// is a 400 that says why and what to do instead.
func TestModelWithoutTokenizerThroughTheStack(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	eng := &ownTextEngine{}
	s.addEngineOnlyWorker(t, "tiny-gguf", eng)

	var list openai.ModelList
	if err := json.Unmarshal(s.get(t, "/v1/models").body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 1 || list.Data[0].Processing == nil || *list.Data[0].Processing != (openai.ModelProcessing{Preprocessing: "engine", Postprocessing: "engine"}) {
		t.Errorf("/v1/models: %+v; want the model, processed by its engine", list.Data)
	}

	t.Run("chat", func(t *testing.T) {
		r := s.post(t, "/v1/chat/completions", `{"model":"tiny-gguf","messages":[{"role":"user","content":"hi"}]}`)
		var got openai.ChatCompletion
		if err := json.Unmarshal(r.body, &got); r.status != 200 || err != nil {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if c := got.Choices[0]; c.Message.Content == nil || *c.Message.Content != "Hello from llama" || c.FinishReason == nil || *c.FinishReason != "stop" {
			t.Errorf("choice %+v: want the engine's text, stopped", c)
		}
		if u := got.Usage; u == nil || u.PromptTokens != 5 || u.CompletionTokens != 4 || u.TotalTokens != 9 {
			t.Errorf("usage %+v: want 5 prompt tokens (the engine's), 4 completion tokens", u)
		}
		tr := eng.requests()
		if last := tr[len(tr)-1]; last.Prompt != nil || !strings.Contains(string(last.Messages), `"content":"hi"`) || !last.AddGenerationPrompt {
			t.Errorf("tokenize request %+v: want the conversation", last)
		}
	})

	t.Run("chat streamed", func(t *testing.T) {
		r := s.post(t, "/v1/chat/completions", `{"model":"tiny-gguf","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
		chunks, done := sseData(t, r.body)
		if r.status != 200 || !done {
			t.Fatalf("status %d, [DONE] %v: %s", r.status, done, r.body)
		}
		var text strings.Builder
		var usage *openai.Usage
		for _, c := range chunks {
			var ch openai.ChatCompletionChunk
			if err := json.Unmarshal([]byte(c), &ch); err != nil {
				t.Fatal(err)
			}
			for _, choice := range ch.Choices {
				if choice.Delta.Content != nil {
					text.WriteString(*choice.Delta.Content)
				}
			}
			if ch.Usage != nil {
				usage = ch.Usage
			}
		}
		if text.String() != "Hello from llama" || usage == nil || usage.PromptTokens != 5 || usage.CompletionTokens != 4 {
			t.Errorf("streamed %q, usage %+v", text.String(), usage)
		}
	})

	t.Run("completions with a text prompt", func(t *testing.T) {
		r := s.post(t, "/v1/completions", `{"model":"tiny-gguf","prompt":"abc","max_tokens":10}`)
		var got openai.Completion
		if err := json.Unmarshal(r.body, &got); r.status != 200 || err != nil {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if got.Choices[0].Text != "Hello from llama" {
			t.Errorf("text %q: want the engine's", got.Choices[0].Text)
		}
		if u := got.Usage; u == nil || u.PromptTokens != 4 || u.CompletionTokens != 4 {
			t.Errorf("usage %+v: want 4 prompt tokens (BOS + 3, the engine's), 4 completion tokens", u)
		}
		tr := eng.requests()
		if last := tr[len(tr)-1]; last.Prompt == nil || *last.Prompt != "abc" || !last.AddSpecialTokens || last.Model != "tiny-gguf" {
			t.Errorf("tokenize request %+v: want the text, with special tokens", last)
		}
	})

	const msg = "logprobs need the model's tokenizer: this model is served with the engine's own processing (no tokenizer on its card); serve it with --model-path DIR and frontend processing"
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"tiny-gguf","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":2}`, "logprobs"},
		{"/v1/chat/completions", `{"model":"tiny-gguf","messages":[{"role":"user","content":"hi"}],"logprobs":true,"stream":true}`, "logprobs"},
		{"/v1/completions", `{"model":"tiny-gguf","prompt":"abc","logprobs":2}`, "logprobs"},
	} {
		r := s.post(t, tc.path, tc.body)
		if r.status != 400 {
			t.Errorf("%s %s: status %d, want 400: %s", tc.path, tc.body, r.status, r.body)
			continue
		}
		if e := errorInfo(t, r.body); e.Message != msg || e.Param == nil || *e.Param != tc.param || e.Type != "invalid_request_error" {
			t.Errorf("%s %s: error %+v; want %q on %s", tc.path, tc.body, e, msg, tc.param)
		}
	}
}
