package bridge_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
)

// field reads a dotted path of a JSON body.
func field(body map[string]any, path string) any {
	var v any = body
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Each kind of guided decoding reaches the engine in its own field, or is
// refused; so do the routing hints.
func TestGuidedAndRoutingMapping(t *testing.T) {
	type want struct {
		path  string // where the value lands ("" for a refusal)
		value string // its JSON
	}
	guided := func(g string) func(*backend.Request) {
		return func(r *backend.Request) { r.SamplingOptions.GuidedDecoding = json.RawMessage(g) }
	}
	routing := func(rt backend.Routing) func(*backend.Request) {
		return func(r *backend.Request) { r.Routing = &rt }
	}
	cases := []struct {
		name  string
		adapt func(*backend.Request)
		by    map[string]want // per variant name; absent: refused
	}{
		{"regex", guided(`{"regex":"a+"}`), map[string]want{
			"vllm": {"structured_outputs.regex", `"a+"`}, "vllm-generate": {"sampling_params.structured_outputs.regex", `"a+"`},
			"sglang": {"sampling_params.regex", `"a+"`}}},
		{"choice", guided(`{"choice":["yes","no"]}`), map[string]want{
			"vllm": {"structured_outputs.choice", `["yes","no"]`}, "vllm-generate": {"sampling_params.structured_outputs.choice", `["yes","no"]`}}},
		{"grammar", guided(`{"grammar":"root ::= \"a\""}`), map[string]want{
			"vllm": {"structured_outputs.grammar", `"root ::= \"a\""`}, "vllm-generate": {"sampling_params.structured_outputs.grammar", `"root ::= \"a\""`},
			"sglang": {"sampling_params.ebnf", `"root ::= \"a\""`}}},
		{"structural tag", guided(`{"structural_tag":{"type":"structural_tag","format":{}}}`), map[string]want{
			"vllm":          {"structured_outputs.structural_tag", `"{\"type\":\"structural_tag\",\"format\":{}}"`},
			"vllm-generate": {"sampling_params.structured_outputs.structural_tag", `"{\"type\":\"structural_tag\",\"format\":{}}"`},
			"sglang":        {"sampling_params.structural_tag", `"{\"type\":\"structural_tag\",\"format\":{}}"`}}},
		{"json with a whitespace pattern", guided(`{"json":{"type":"object"},"whitespace_pattern":" ?"}`), map[string]want{
			"vllm":          {"structured_outputs.whitespace_pattern", `" ?"`},
			"vllm-generate": {"sampling_params.structured_outputs.whitespace_pattern", `" ?"`}}},
		{"two kinds at once", guided(`{"json":{"type":"object"},"regex":"a"}`), nil},
		{"a backend hint", guided(`{"json":{"type":"object"},"backend":"outlines"}`), nil},
		{"dp rank", routing(backend.Routing{DPRank: backend.Ptr[uint32](2)}), map[string]want{
			"vllm": {"header:X-Data-Parallel-Rank", `"2"`}, "vllm-generate": {"header:X-Data-Parallel-Rank", `"2"`},
			"sglang": {"routed_dp_rank", `2`}}},
		{"cache salt", routing(backend.Routing{CacheSalt: backend.Ptr("s")}), map[string]want{
			"vllm": {"cache_salt", `"s"`}, "vllm-generate": {"cache_salt", `"s"`}, "sglang": {"extra_key", `"s"`}}},
		{"priority", routing(backend.Routing{Priority: backend.Ptr(5)}), map[string]want{
			"vllm": {"priority", `5`}, "vllm-generate": {"priority", `5`}, "sglang": {"priority", `5`}}},
		{"lora", routing(backend.Routing{LoraName: backend.Ptr("fake-model")}), map[string]want{
			"vllm": {"model", `"fake-model"`}, "vllm-generate": {"model", `"fake-model"`}, "sglang": {"lora_path", `"fake-model"`}}},
		{"max thinking tokens", func(r *backend.Request) { r.StopConditions.MaxThinkingTokens = backend.Ptr[uint32](8) }, map[string]want{
			"vllm": {"thinking_token_budget", `8`}, "vllm-generate": {"sampling_params.thinking_token_budget", `8`}}},
	}
	for _, v := range variants {
		e, srv := started(t, v.dialect, v.opts)
		for _, c := range cases {
			t.Run(v.name+"/"+c.name, func(t *testing.T) {
				before := len(srv.Bodies())
				req := &backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](1)}}
				c.adapt(req)
				_, err := collect(t, e, t.Context(), req)
				w, mapped := c.by[v.name]
				if !mapped {
					if !errors.Is(err, backend.ErrInvalidArgument) {
						t.Fatalf("err %v, want a refusal (InvalidArgument)", err)
					}
					if len(srv.Bodies()) != before {
						t.Error("the refused request reached the engine")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var v any
				if h, ok := strings.CutPrefix(w.path, "header:"); ok {
					v = srv.Headers()[before].Get(h)
				} else {
					v = field(srv.Bodies()[before], w.path)
				}
				got, _ := json.Marshal(v)
				if string(got) != w.value {
					t.Errorf("%s = %s, want %s", w.path, got, w.value)
				}
			})
		}
	}
}

// What a dialect cannot do is refused with InvalidArgument naming it,
// before anything is sent.
func TestMoreRefusals(t *testing.T) {
	cases := []struct {
		dialects []string
		adapt    func(r *backend.Request)
		want     string
	}{
		{dialects, func(r *backend.Request) { r.SamplingOptions.BestOf = backend.Ptr(3) }, "best_of 3"},
		{dialects, func(r *backend.Request) { r.OutputOptions.PromptLogprobs = backend.Ptr[uint32](1) }, "prompt_logprobs"},
		{dialects, func(r *backend.Request) { r.MultiModalData = json.RawMessage(`{"image_url":["x"]}`) }, "multimodal"},
		{dialects, func(r *backend.Request) { r.ExtraArgs = json.RawMessage(`{"x":1}`) }, "extra_args"},
		{dialects, func(r *backend.Request) { r.PrefillResult = &backend.PrefillResult{} }, "disaggregated"},
		{[]string{bridge.DialectSGLang, bridge.DialectLlamaCpp}, func(r *backend.Request) { r.SamplingOptions.UseBeamSearch = backend.Ptr(true) }, "beam search"},
		{[]string{bridge.DialectSGLang, bridge.DialectLlamaCpp}, func(r *backend.Request) { r.SamplingOptions.LengthPenalty = backend.Ptr(1.2) }, "length_penalty"},
		{[]string{bridge.DialectSGLang, bridge.DialectLlamaCpp}, func(r *backend.Request) { r.StopConditions.MaxThinkingTokens = backend.Ptr[uint32](8) }, "max_thinking_tokens"},
		{[]string{bridge.DialectLlamaCpp}, func(r *backend.Request) { r.Routing = &backend.Routing{CacheSalt: backend.Ptr("s")} }, "cache_salt"},
		{[]string{bridge.DialectLlamaCpp}, func(r *backend.Request) { r.Routing = &backend.Routing{Priority: backend.Ptr(1)} }, "priority"},
		{[]string{bridge.DialectLlamaCpp}, func(r *backend.Request) { r.Routing = &backend.Routing{LoraName: backend.Ptr("a")} }, "LoRA"},
		{[]string{bridge.DialectLlamaCpp}, func(r *backend.Request) { r.Routing = &backend.Routing{DPRank: backend.Ptr[uint32](1)} }, "rank 1"},
		{[]string{bridge.DialectSGLang, bridge.DialectLlamaCpp}, func(r *backend.Request) {
			r.SamplingOptions.GuidedDecoding = json.RawMessage(`{"json":{"type":"object"},"whitespace_pattern":" "}`)
		}, "whitespace_pattern"},
		{[]string{bridge.DialectLlamaCpp}, func(r *backend.Request) {
			r.SamplingOptions.GuidedDecoding = json.RawMessage(`{"grammar":"root ::= \"a\""}`)
		}, "grammar"},
		{[]string{bridge.DialectLlamaCpp}, func(r *backend.Request) {
			r.SamplingOptions.GuidedDecoding = json.RawMessage(`{"structural_tag":{"type":"x"}}`)
		}, "structural tag"},
	}
	for _, c := range cases {
		for _, d := range c.dialects {
			t.Run(d+"/"+c.want, func(t *testing.T) {
				e, srv := started(t, d, bridgetest.Options{})
				req := &backend.Request{TokenIDs: []uint32{1}, EOSTokenIDs: []uint32{2}}
				c.adapt(req)
				_, err := collect(t, e, t.Context(), req)
				if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err %v, want InvalidArgument mentioning %q", err, c.want)
				}
				if n := len(srv.Bodies()); n != 0 {
					t.Errorf("%d requests reached the engine", n)
				}
			})
		}
	}
}
