package bridge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
)

// fakeVLLM is a vLLM server with /tokenize for messages and completions
// chunks that carry text; tokenize is what /tokenize answers.
func fakeVLLM(t *testing.T, tokenize func(body map[string]json.RawMessage) (int, string)) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"m","max_model_len":100}]}`)
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		status, answer := tokenize(body)
		w.WriteHeader(status)
		fmt.Fprint(w, answer)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			SkipSpecialTokens bool `json:"skip_special_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`{"choices":[{"index":0,"text":"Hel","token_ids":[5]}]}`,
			`{"choices":[{"index":0,"text":"lo","token_ids":[6]}]}`,
			fmt.Sprintf(`{"choices":[{"index":0,"text":"%v","token_ids":[2],"finish_reason":"stop","stop_reason":null}]}`, map[bool]string{true: "", false: "</s>"}[body.SkipSpecialTokens]),
			`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3}}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func startedAt(t *testing.T, cfg bridge.Config) *bridge.Engine {
	t.Helper()
	cfg.StartTimeout = 5 * time.Second
	e := newEngine(t, cfg)
	if _, err := e.Start(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Cleanup(t.Context()) })
	return e
}

// Native preprocessing: the conversation goes to vLLM's /tokenize as
// messages, and its tokens come back; a 4xx is the client's error with
// the engine's message.
func TestTokenizeChatAsksTheEngine(t *testing.T) {
	var got map[string]json.RawMessage
	url := fakeVLLM(t, func(body map[string]json.RawMessage) (int, string) {
		got = body
		if strings.Contains(string(body["messages"]), "bad") {
			return 400, `{"error":{"message":"Conversation roles must alternate"}}`
		}
		return 200, `{"tokens":[1,2,3],"count":3,"max_model_len":100}`
	})
	e := startedAt(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: url})
	req := &backend.TokenizeRequest{Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), AddGenerationPrompt: true,
		Tools: json.RawMessage(`[{"type":"function","function":{"name":"f"}}]`), ChatTemplateKwargs: json.RawMessage(`{"enable_thinking":false}`)}
	ids, err := e.TokenizeChat(t.Context(), req)
	if err != nil || fmt.Sprint(ids) != "[1 2 3]" {
		t.Fatalf("tokens %v, %v; want [1 2 3]", ids, err)
	}
	for k, want := range map[string]string{"model": `"m"`, "messages": string(req.Messages), "tools": string(req.Tools),
		"add_generation_prompt": "true", "add_special_tokens": "false", "chat_template_kwargs": `{"enable_thinking":false}`} {
		if string(got[k]) != want {
			t.Errorf("/tokenize %s = %s, want %s", k, got[k], want)
		}
	}
	req.Messages = json.RawMessage(`[{"role":"user","content":"bad"}]`)
	_, err = e.TokenizeChat(t.Context(), req)
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "roles must alternate") {
		t.Errorf("refused conversation: %v; want ErrInvalidArgument with the engine's message", err)
	}
}

// SGLang's and llama.cpp's tokenize endpoints take text, not messages:
// native preprocessing is refused with the reason.
func TestNativeProcessingRefusedWhereTheEngineCannot(t *testing.T) {
	e, _ := started(t, bridge.DialectSGLang, bridgetest.Options{})
	_, err := e.TokenizeChat(t.Context(), &backend.TokenizeRequest{Messages: json.RawMessage(`[]`)})
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "not messages") {
		t.Errorf("sglang TokenizeChat: %v", err)
	}
}

// Engine postprocessing on SGLang (cumulative text, cut to the new part)
// and llama.cpp (incremental content): the outputs' text adds up to the
// engine's answer, one "x" per token in the fake engines.
func TestEngineTextOnSGLangAndLlamaCpp(t *testing.T) {
	for _, d := range []string{bridge.DialectSGLang, bridge.DialectLlamaCpp} {
		t.Run(d, func(t *testing.T) {
			srv := bridgetest.New(d, bridgetest.Options{})
			t.Cleanup(srv.Close)
			e := startedAt(t, bridge.Config{Dialect: d, URL: srv.URL, EngineText: true})
			req := &backend.Request{TokenIDs: []uint32{1, 2, 3}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(5))}}
			outs, err := collect(t, e, t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, o := range outs {
				if o.Text != nil {
					text.WriteString(*o.Text)
				}
			}
			if n := len(ids(outs)); text.String() != strings.Repeat("x", n) || n != 5 {
				t.Errorf("text %q for %d ids, want one x per id and 5 ids", text.String(), n)
			}
		})
	}
}

// Engine postprocessing: each output carries vLLM's text beside its ids,
// and special tokens are skipped unless the request keeps them.
func TestEngineTextOnOutputs(t *testing.T) {
	url := fakeVLLM(t, nil)
	for _, tc := range []struct {
		skip *bool
		want string
	}{{nil, "Hello"}, {backend.Ptr(false), "Hello</s>"}} {
		e := startedAt(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: url, EngineText: true})
		req := &backend.Request{TokenIDs: []uint32{1, 2, 3}}
		req.OutputOptions.SkipSpecialTokens = tc.skip
		outs, err := collect(t, e, t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, o := range outs {
			if o.Text == nil {
				t.Fatalf("output %+v has no text", o)
			}
			text.WriteString(*o.Text)
		}
		if text.String() != tc.want || fmt.Sprint(ids(outs)) != "[5 6 2]" {
			t.Errorf("skip_special_tokens %v: text %q ids %v; want %q and [5 6 2]", tc.skip, text.String(), ids(outs), tc.want)
		}
	}
	// Without EngineText the bridge carries ids only.
	e := startedAt(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: url})
	outs, _ := collect(t, e, t.Context(), &backend.Request{TokenIDs: []uint32{1}})
	for _, o := range outs {
		if o.Text != nil {
			t.Errorf("output %+v has text without EngineText", o)
		}
	}
}
