package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
)

// startVLLM starts a bridge with cfg (its URL set) over srv.
func startVLLM(t *testing.T, srv *bridgetest.Server, cfg bridge.Config) (*bridge.Engine, error) {
	t.Helper()
	cfg.Dialect, cfg.URL, cfg.StartTimeout = bridge.DialectVLLM, srv.URL, 5*time.Second
	e := newEngine(t, cfg)
	t.Cleanup(func() { _ = e.Cleanup(context.Background()) })
	_, err := e.Start(t.Context(), 1)
	return e, err
}

// A vLLM that streams /inference/v1/generate gets token ids there (one
// probe at Start); one without it, or a bridge told so, uses
// /v1/completions; a bridge that requires the endpoint does not start
// without it.
func TestVLLMChoosesItsAPI(t *testing.T) {
	req := &backend.Request{TokenIDs: []uint32{1, 2}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](3)}}
	for _, c := range []struct {
		name     string
		generate bool   // the engine serves the endpoint
		api      string // Config.VLLMAPI
		want     string // the body's prompt field: token_ids or prompt
		probes   int
	}{
		{"auto, the engine streams it", true, "", "token_ids", 1},
		{"auto, the engine has none", false, bridge.VLLMAPIAuto, "prompt", 0},
		{"completions asked for", true, bridge.VLLMAPICompletions, "prompt", 0},
		{"generate asked for", true, bridge.VLLMAPIGenerate, "token_ids", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{VLLMGenerate: c.generate})
			defer srv.Close()
			e, err := startVLLM(t, srv, bridge.Config{VLLMAPI: c.api})
			if err != nil {
				t.Fatal(err)
			}
			outs, err := collect(t, e, t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(outs); len(got) != 3 || outs[len(outs)-1].FinishReason.Kind != backend.FinishLength {
				t.Errorf("ids %v, finish %v: want 3 tokens ending with length", got, outs[len(outs)-1].FinishReason)
			}
			if _, ok := srv.Bodies()[0][c.want]; !ok {
				t.Errorf("request body %v: want a %s field", srv.Bodies()[0], c.want)
			}
			if srv.Probes() != c.probes {
				t.Errorf("%d probes, want %d", srv.Probes(), c.probes)
			}
		})
	}
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{})
	defer srv.Close()
	if _, err := startVLLM(t, srv, bridge.Config{VLLMAPI: bridge.VLLMAPIGenerate}); err == nil || !strings.Contains(err.Error(), "/inference/v1/generate") {
		t.Errorf("generate required from an engine without it: %v", err)
	}
}

// What only completions has (the engine's text, beam search) goes there
// even when the engine streams /inference/v1/generate.
func TestVLLMCompletionsOnlyFeatures(t *testing.T) {
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{VLLMGenerate: true})
	defer srv.Close()
	e, err := startVLLM(t, srv, bridge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	beam := &backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](2)},
		SamplingOptions: backend.SamplingOptions{UseBeamSearch: backend.Ptr(true), LengthPenalty: backend.Ptr(0.5)}}
	if _, err := collect(t, e, t.Context(), beam); err != nil {
		t.Fatal(err)
	}
	body := srv.Bodies()[0]
	if body["prompt"] == nil || body["use_beam_search"] != true || body["length_penalty"] != 0.5 {
		t.Errorf("beam search went as %v, want completions with use_beam_search and length_penalty", body)
	}

	text, err := startVLLM(t, srv, bridge.Config{EngineText: true})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := collect(t, text, t.Context(), &backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](2)}})
	if err != nil {
		t.Fatal(err)
	}
	if body := srv.Bodies()[1]; body["prompt"] == nil || outs[0].Text == nil {
		t.Errorf("engine text: body %v, first output text %v; want completions and its text", body, outs[0].Text)
	}
}

// The body of /inference/v1/generate: the sampling parameters under
// sampling_params, detokenize off, the routing fields beside them, and
// the dp rank in vLLM's X-data-parallel-rank header; logprobs come back in
// the chat shape.
func TestVLLMGenerateMapping(t *testing.T) {
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{VLLMGenerate: true, Model: "base"})
	defer srv.Close()
	e, err := startVLLM(t, srv, bridge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	req := &backend.Request{
		TokenIDs: []uint32{5, 6}, EOSTokenIDs: []uint32{2},
		StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](2), MinTokens: backend.Ptr[uint32](1),
			StopTokenIDs: []uint32{9}, StopTokenIDsHidden: []uint32{2}, MaxThinkingTokens: backend.Ptr[uint32](64)},
		SamplingOptions: backend.SamplingOptions{Temperature: backend.Ptr(0.5), TopK: backend.Ptr(4), Seed: backend.Ptr[int64](3),
			GuidedDecoding: json.RawMessage(`{"regex":"[a-z]+"}`)},
		OutputOptions: backend.OutputOptions{Logprobs: backend.Ptr[uint32](1)},
		Routing:       &backend.Routing{DPRank: backend.Ptr[uint32](1), CacheSalt: backend.Ptr("salt"), Priority: backend.Ptr(-1)},
	}
	outs, err := collect(t, e, t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "base", "token_ids": []any{5.0, 6.0}, "stream": true, "stream_options": map[string]any{"include_usage": true},
		"cache_salt": "salt", "priority": -1.0,
		"sampling_params": map[string]any{"max_tokens": 2.0, "min_tokens": 1.0, "stop_token_ids": []any{9.0, 2.0}, "temperature": 0.5,
			"top_k": 4.0, "seed": 3.0, "logprobs": 1.0, "detokenize": false, "thinking_token_budget": 64.0,
			"structured_outputs": map[string]any{"regex": "[a-z]+"}}}
	got := srv.Bodies()[0]
	for k, v := range want {
		gb, _ := json.Marshal(got[k])
		wb, _ := json.Marshal(v)
		if string(gb) != string(wb) {
			t.Errorf("%s: %s, want %s", k, gb, wb)
		}
	}
	if h := srv.Headers()[0].Get("X-Data-Parallel-Rank"); h != "1" {
		t.Errorf("X-data-parallel-rank %q, want 1", h)
	}
	var top [][]struct {
		Rank    int     `json:"rank"`
		TokenID uint32  `json:"token_id"`
		Logprob float64 `json:"logprob"`
	}
	if len(outs[0].LogProbs) != 1 || outs[0].LogProbs[0] != -0.5 || json.Unmarshal(outs[0].TopLogprobs, &top) != nil ||
		len(top[0]) != 2 || top[0][0].TokenID != 1000 || top[0][0].Rank != 1 || top[0][1].TokenID != 7 {
		t.Errorf("logprobs %v, top %s", outs[0].LogProbs, outs[0].TopLogprobs)
	}
	// A LoRA adapter is a model of vLLM's: its name goes in model.
	req.Routing = &backend.Routing{LoraName: backend.Ptr("sql-lora")}
	if _, err := collect(t, e, t.Context(), req); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("an adapter the fake does not serve: %v, want its 404 as InvalidArgument", err)
	}
	if got := srv.Bodies()[1]["model"]; got != "sql-lora" {
		t.Errorf("model %v, want the adapter's name", got)
	}
}

// /inference/v1/generate sends nothing for an output without new tokens:
// a finish that came that way is missing, and the bridge tells it from
// the choice's last token (a stop or EOS id) or its length.
func TestVLLMGenerateInfersAMissingFinish(t *testing.T) {
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{VLLMGenerate: true, OmitFinish: true, DefaultTokens: 4})
	defer srv.Close()
	e, err := startVLLM(t, srv, bridge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		req  *backend.Request
		want backend.FinishKind
	}{
		{&backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](3)}}, backend.FinishLength},
		{&backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{StopTokenIDsHidden: []uint32{bridgetest.EOS}}}, backend.FinishEOS},
		{&backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{StopTokenIDs: []uint32{1001}}}, backend.FinishStop},
	} {
		outs, err := collect(t, e, t.Context(), c.req)
		if err != nil {
			t.Fatal(err)
		}
		last := outs[len(outs)-1]
		if last.FinishReason == nil || last.FinishReason.Kind != c.want || last.CompletionUsage == nil {
			t.Errorf("%+v: last output %+v, want finish %s with usage", c.req.StopConditions, last, c.want)
		}
	}
}
