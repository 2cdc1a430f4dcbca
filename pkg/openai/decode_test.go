package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// chatBody is a minimal valid chat body with extra members appended.
func chatBody(extra string) string {
	b := `{"model":"m","messages":[{"role":"user","content":"hi"}]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// completionBody is a minimal valid completions body with extra members
// appended.
func completionBody(extra string) string {
	b := `{"model":"m","prompt":"hi"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// checkValidation fails unless err is a *ValidationError whose message is
// exact (when set) and contains contains (when set).
func checkValidation(t *testing.T, err error, exact, contains string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v (%T), want *ValidationError", err, err)
	}
	if exact != "" && ve.Message != exact {
		t.Errorf("message = %q\n         want %q", ve.Message, exact)
	}
	if contains != "" && !strings.Contains(ve.Message, contains) {
		t.Errorf("message = %q, want it to contain %q", ve.Message, contains)
	}
}

var nvextNames = "`greed_sampling`, `use_raw_prompt`, `annotations`, `backend_instance_id`, `token_data`, " +
	"`max_thinking_tokens`, `extra_fields`, `prefill_worker_id`, `decode_worker_id`, `dp_rank`, " +
	"`prefill_dp_rank`, `agent_hints`, `session_control`, `request_timestamp_ms`, `cache_salt`, `router`"

var decodeErrorTests = []struct {
	name     string
	body     string
	opts     DecodeOptions
	exact    string
	contains string
}{
	{name: "invalid utf8", body: "{\"model\":\"m\xff\"}", exact: "Validation: request body is not valid UTF-8"},
	{name: "empty body", body: "", exact: "Validation: invalid JSON: unexpected end of JSON input at byte offset 0"},
	{name: "truncated", body: `{"model":`, exact: "Validation: invalid JSON: unexpected end of JSON input at byte offset 9"},
	{name: "bad token", body: `{"model":x}`, exact: "Validation: invalid JSON: invalid character 'x' looking for beginning of value at byte offset 10"},
	{name: "trailing data", body: `{"model":"m"} {}`, exact: "Validation: invalid JSON: invalid character '{' after top-level value at byte offset 15"},
	{name: "array body", body: `[]`, exact: "Validation: request body must be a JSON object"},
	{name: "null body", body: ` null `, exact: "Validation: request body must be a JSON object"},
	{name: "string body", body: `"x"`, exact: "Validation: request body must be a JSON object"},
	{name: "wrong type", body: chatBody(`"temperature":"hot"`), exact: "Validation: field `temperature`: expected a number, got string"},
	{name: "wrong type bool", body: chatBody(`"stream":"yes"`), exact: "Validation: field `stream`: expected a boolean, got string"},
	{name: "wrong type embedded", body: chatBody(`"top_k":1.5`), exact: "Validation: field `top_k`: expected an integer, got number 1.5"},
	{name: "wrong type unsigned", body: chatBody(`"min_tokens":-1`), exact: "Validation: field `min_tokens`: expected a non-negative integer, got number -1"},
	{name: "wrong type nested nvext", body: chatBody(`"nvext":{"backend_instance_id":"a"}`), exact: "Validation: field `nvext.backend_instance_id`: expected a non-negative integer, got string"},
	{name: "nvext not object", body: chatBody(`"nvext":[1]`), exact: "Validation: field `nvext`: expected an object, got array"},
	{name: "model not string", body: `{"model":1,"messages":[]}`, exact: "Validation: field `model`: expected a string, got number"},
	{name: "messages not array", body: `{"model":"m","messages":{}}`, exact: "Validation: field `messages`: expected an array, got object"},
	{name: "message not object", body: `{"model":"m","messages":["hi"]}`, exact: "Validation: field `messages`: expected an object, got string"},
	{name: "role not string", body: `{"model":"m","messages":[{"role":true}]}`, exact: "Validation: field `messages.role`: expected a string, got boolean"},
	{name: "content bad", body: `{"model":"m","messages":[{"role":"user","content":5}]}`, exact: "Validation: field `messages.content`: expected a string, an array of content parts, or null"},
	{name: "content part bad", body: `{"model":"m","messages":[{"role":"user","content":[{"type":1}]}]}`, exact: "Validation: field `messages.content.type`: expected a string, got number"},
	{name: "stop bad", body: chatBody(`"stop":5`), exact: "Validation: field `stop`: expected a string, an array of strings, or an array of token ids"},
	{name: "logit_bias value bad", body: chatBody(`"logit_bias":{"1":"x"}`), exact: "Validation: field `logit_bias`: expected a number, got string"},
	{name: "unknown fields", body: chatBody(`"foo":1,"bar":null`), exact: "Unsupported parameter(s): `bar`, `foo`"},
	{name: "unknown case variant", body: chatBody(`"Temperature":1`), exact: "Unsupported parameter(s): `Temperature`"},
	{name: "unknown nvext key", body: chatBody(`"nvext":{"use_raw_prompt":true,"zzz":1,"aaa":2}`), exact: "Validation: nvext: unknown field `zzz`, expected one of " + nvextNames},
	{name: "nvext case variant", body: chatBody(`"nvext":{"Greed_Sampling":true}`), contains: "unknown field `Greed_Sampling`"},
	{name: "nvext disabled", body: chatBody(`"nvext":{}`), opts: DecodeOptions{DisableNvExt: true}, exact: "Unsupported parameter(s): `nvext`"},
	{name: "validation runs", body: chatBody(`"temperature":5`), exact: "Validation: temperature must be between 0 and 2, got 5"},
}

func TestDecodeChatErrors(t *testing.T) {
	for _, tc := range decodeErrorTests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeChat([]byte(tc.body), tc.opts)
			if r != nil {
				t.Errorf("request = %+v, want nil", r)
			}
			checkValidation(t, err, tc.exact, tc.contains)
		})
	}
}

func TestDecodeCompletionErrors(t *testing.T) {
	tests := []struct {
		name, body, exact string
		opts              DecodeOptions
	}{
		{name: "invalid utf8", body: "{\"prompt\":\"\xc3\x28\"}", exact: "Validation: request body is not valid UTF-8"},
		{name: "truncated", body: `{"prompt":[1,`, exact: "Validation: invalid JSON: unexpected end of JSON input at byte offset 13"},
		{name: "prompt bad", body: `{"model":"m","prompt":[1,"a"]}`, exact: "Validation: field `prompt`: expected a string, an array of strings, an array of token ids, or an array of token-id arrays"},
		{name: "prompt negative id", body: `{"model":"m","prompt":[-1]}`, exact: "Validation: field `prompt`: expected a string, an array of strings, an array of token ids, or an array of token-id arrays"},
		{name: "logprobs type", body: completionBody(`"logprobs":true`), exact: "Validation: field `logprobs`: expected an integer, got boolean"},
		{name: "chat-only field", body: completionBody(`"messages":[]`), exact: "Unsupported parameter(s): `messages`"},
		{name: "chat-only functions", body: completionBody(`"functions":[]`), exact: "Unsupported parameter(s): `functions`"},
		{name: "unknown nvext key", body: completionBody(`"nvext":{"x":1}`), exact: "Validation: nvext: unknown field `x`, expected one of " + nvextNames},
		{name: "nvext disabled", body: completionBody(`"nvext":{"annotations":[]}`), opts: DecodeOptions{DisableNvExt: true}, exact: "Unsupported parameter(s): `nvext`"},
		{name: "validation runs", body: completionBody(`"logprobs":6`), exact: "Validation: logprobs must be between 0 and 5, got 6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeCompletion([]byte(tc.body), tc.opts)
			if r != nil {
				t.Errorf("request = %+v, want nil", r)
			}
			checkValidation(t, err, tc.exact, "")
		})
	}
}

func TestDecodeChatLegacyFunctions(t *testing.T) {
	r, err := DecodeChat([]byte(chatBody(`"functions":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],"function_call":{"name":"get_weather"}`)), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.LegacyFunctions || len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "get_weather" {
		t.Fatalf("functions not mapped to tools: legacy=%v tools=%+v", r.LegacyFunctions, r.Tools)
	}
	tc, err := r.ToolChoice()
	if err != nil || tc != (ToolChoice{Mode: ToolChoiceFunction, Name: "get_weather"}) {
		t.Fatalf("function_call {name} -> tool_choice %+v, %v", tc, err)
	}
	r, err = DecodeChat([]byte(chatBody(`"functions":[{"name":"f"}],"function_call":"none"`)), DecodeOptions{})
	if err != nil || !r.ToolChoiceNone() {
		t.Fatalf("function_call none: %v, none=%v", err, r != nil && r.ToolChoiceNone())
	}
	for _, tc := range []struct{ extra, param string }{
		{`"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"g"}}]`, "functions"},
		{`"functions":{"name":"f"}`, "functions"},
		{`"functions":[{"name":"f"}],"function_call":"required"`, "function_call"},
		{`"functions":[{"name":"f"}],"function_call":{"name":"g"}`, "tool_choice"},
		{`"functions":[],"temperature":9`, "temperature"},
	} {
		_, err := DecodeChat([]byte(chatBody(tc.extra)), DecodeOptions{})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Param != tc.param {
			t.Errorf("%s: error = %v, want a ValidationError on %s", tc.extra, err, tc.param)
		}
	}
	// null means absent.
	if r, err := DecodeChat([]byte(chatBody(`"functions":null,"function_call":null`)), DecodeOptions{}); err != nil || r.LegacyFunctions {
		t.Errorf("null functions: %v", err)
	}
}

func TestDecodeChatTools(t *testing.T) {
	const weather = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	for _, tc := range []struct {
		extra string
		want  ToolChoice
	}{
		{`"tools":[` + weather + `]`, ToolChoice{Mode: ToolChoiceAuto}},
		{``, ToolChoice{Mode: ToolChoiceNone}},
		{`"tools":[` + weather + `],"tool_choice":"none"`, ToolChoice{Mode: ToolChoiceNone}},
		{`"tools":[` + weather + `],"tool_choice":"required"`, ToolChoice{Mode: ToolChoiceRequired}},
		{`"tools":[` + weather + `],"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, ToolChoice{Mode: ToolChoiceFunction, Name: "get_weather"}},
	} {
		r, err := DecodeChat([]byte(chatBody(tc.extra)), DecodeOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		if got, err := r.ToolChoice(); err != nil || got != tc.want {
			t.Errorf("%s: tool choice %+v, %v; want %+v", tc.extra, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ extra, param string }{
		{`"tool_choice":"required"`, "tool_choice"},
		{`"tools":[` + weather + `],"tool_choice":"sometimes"`, "tool_choice"},
		{`"tools":[` + weather + `],"tool_choice":{"type":"function","function":{"name":"nope"}}`, "tool_choice"},
		{`"tools":[` + weather + `],"tool_choice":{"type":"function"}`, "tool_choice"},
		{`"tools":[{"type":"retrieval","function":{"name":"f"}}]`, "tools[0].type"},
		{`"tools":[{"type":"function","function":{"name":""}}]`, "tools[0].function.name"},
		{`"tools":[{"type":"function","function":{"name":"f","parameters":[1,2]}}]`, "tools[0].function.parameters"},
		{`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":7}}}]`, "tools[0].function.parameters"},
		{`"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"a":3}}}}]`, "tools[0].function.parameters"},
		{`"tools":[{"type":"function","function":{"name":"f","parameters":{"required":"a"}}}]`, "tools[0].function.parameters"},
		{`"tools":[` + weather + `],"tool_choice":"required","response_format":{"type":"json_object"}`, "tool_choice"},
	} {
		_, err := DecodeChat([]byte(chatBody(tc.extra)), DecodeOptions{})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Param != tc.param {
			t.Errorf("%s: error = %v, want a ValidationError on %s", tc.extra, err, tc.param)
		}
	}
}

func TestToolSchema(t *testing.T) {
	r, err := DecodeChat([]byte(chatBody(`"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}},{"type":"function","function":{"name":"b"}}],"tool_choice":"required"`)), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.GuidedDecoding()
	if err != nil || g == nil {
		t.Fatalf("guided = %v, %v", g, err)
	}
	var schema struct {
		Type     string `json:"type"`
		MinItems int    `json:"minItems"`
		Items    struct {
			AnyOf []struct {
				Properties struct {
					Name struct {
						Enum []string `json:"enum"`
					} `json:"name"`
					Parameters json.RawMessage `json:"parameters"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"anyOf"`
		} `json:"items"`
	}
	if err := json.Unmarshal(g.JSON, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "array" || schema.MinItems != 1 || len(schema.Items.AnyOf) != 2 ||
		schema.Items.AnyOf[0].Properties.Name.Enum[0] != "a" || schema.Items.AnyOf[1].Properties.Name.Enum[0] != "b" ||
		!strings.Contains(string(schema.Items.AnyOf[0].Properties.Parameters), `"integer"`) ||
		!strings.Contains(string(schema.Items.AnyOf[1].Properties.Parameters), `"object"`) {
		t.Errorf("required schema = %s", g.JSON)
	}
	named := ToolChoice{Mode: ToolChoiceFunction, Name: "a"}
	if got := string(r.ToolSchema(named)); got != `{"type":"object","properties":{"x":{"type":"integer"}}}` {
		t.Errorf("named schema = %s", got)
	}
	if r.ToolSchema(ToolChoice{Mode: ToolChoiceAuto}) != nil {
		t.Error("auto has a schema")
	}
	if strings.Contains(string(g.JSON), "maxItems") {
		t.Errorf("required schema with parallel calls allowed = %s, want no maxItems", g.JSON)
	}
	off := false
	r.ParallelToolCalls = &off
	if got := string(r.ToolSchema(ToolChoice{Mode: ToolChoiceRequired})); !strings.Contains(got, `"maxItems":1`) {
		t.Errorf("required schema with parallel_tool_calls false = %s, want maxItems 1", got)
	}
}

func TestDecodeAllowUnknownFields(t *testing.T) {
	opts := DecodeOptions{AllowUnknownFields: true}
	r, err := DecodeChat([]byte(chatBody(`"foo":{"a":1},"Temperature":1.5,"temperature":0.5`)), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Temperature == nil || *r.Temperature != 0.5 {
		t.Errorf("temperature = %v, want 0.5 (the ignored `Temperature` must not leak in)", r.Temperature)
	}
	if got := string(r.Messages[0].Raw); got != `{"role":"user","content":"hi"}` {
		t.Errorf("message raw = %s", got)
	}

	r, err = DecodeChat([]byte(chatBody(`"nvext":{"greed_sampling":true}`)), DecodeOptions{AllowUnknownFields: true, DisableNvExt: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.NvExt != nil {
		t.Errorf("nvext = %+v, want dropped", r.NvExt)
	}

	c, err := DecodeCompletion([]byte(completionBody(`"messages":[],"suffix":"s"`)), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Suffix == nil || *c.Suffix != "s" {
		t.Errorf("suffix = %v", c.Suffix)
	}
}

func TestDecodeNullsAreAbsent(t *testing.T) {
	r, err := DecodeChat([]byte(chatBody(`"tool_choice":null,"chat_template_kwargs":null,"guided_json":null,`+
		`"stream_options":null,"stop":null,"nvext":null,"response_format":{"type":"text"}`)),
		DecodeOptions{DisableNvExt: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.ToolChoiceRaw != nil || r.ChatTemplateKwargs != nil || r.GuidedJSON != nil || r.StreamOptions != nil || r.Stop != nil || r.NvExt != nil {
		t.Errorf("null fields not cleared: %+v", r)
	}
	r, err = DecodeChat([]byte(chatBody(`"nvext":{"router":null,"annotations":null}`)), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.NvExt == nil || r.NvExt.Router != nil || r.NvExt.Annotations != nil {
		t.Errorf("nvext = %+v, want empty non-nil", r.NvExt)
	}
}

func TestKnownFields(t *testing.T) {
	chat := chatInfo().known
	for _, k := range []string{"model", "messages", "chat_template_args", "chat_template_kwargs", "nvext", "top_k", "guided_json", "bad_words_token_ids", "functions"} {
		if _, ok := chat[k]; !ok {
			t.Errorf("chat: %q not known", k)
		}
	}
	comp := completionInfo().known
	for _, k := range []string{"prompt", "best_of", "echo", "nvext", "min_p", "cache_salt"} {
		if _, ok := comp[k]; !ok {
			t.Errorf("completion: %q not known", k)
		}
	}
	for _, k := range []string{"messages", "CommonExt", "Raw", "functions"} {
		if _, ok := comp[k]; ok {
			t.Errorf("completion: %q should not be known", k)
		}
	}
}

const fullChat = `{
  "model": "Qwen/Qwen3-0.6B",
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}, {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]},
    {"role": "assistant", "content": null, "reasoning_content": "<think>call</think>",
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18C"}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "strict": true}}],
  "tool_choice": "auto",
  "parallel_tool_calls": false,
  "stream": true,
  "stream_options": {"include_usage": true, "continuous_usage_stats": true},
  "n": 2,
  "max_completion_tokens": 64,
  "max_tokens": 32,
  "temperature": 0.7,
  "top_p": 0.9,
  "frequency_penalty": 0.1,
  "presence_penalty": -0.1,
  "seed": 42,
  "stop": ["</s>", "END"],
  "logprobs": true,
  "top_logprobs": 3,
  "logit_bias": {"50256": -100},
  "user": "u1",
  "service_tier": "auto",
  "store": false,
  "metadata": {"k": "v"},
  "top_k": 0,
  "min_p": 0.05,
  "repetition_penalty": 1.1,
  "min_tokens": 4,
  "ignore_eos": false,
  "include_stop_str_in_output": true,
  "skip_special_tokens": false,
  "chat_template_kwargs": {"enable_thinking": false},
  "add_generation_prompt": true,
  "nvext": {"annotations": ["request_id", "query_instance_id:abc"], "backend_instance_id": 18446744073709551615,
            "greed_sampling": false, "extra_fields": ["worker_id"], "agent_hints": {"priority": 1}}
}`

func TestDecodeChatFull(t *testing.T) {
	r, err := DecodeChat([]byte(fullChat), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "Qwen/Qwen3-0.6B" || len(r.Messages) != 4 || len(r.Tools) != 1 {
		t.Fatalf("model/messages/tools = %q/%d/%d", r.Model, len(r.Messages), len(r.Tools))
	}
	if texts, ok := r.Messages[1].Content.TextOnly(); ok || len(r.Messages[1].Content.Parts) != 2 {
		t.Errorf("user content parts = %v %v", texts, r.Messages[1].Content.Parts)
	}
	asst := r.Messages[2]
	if !asst.Content.IsNull() || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].Function.Name != "get_weather" {
		t.Errorf("assistant = %+v", asst)
	}
	var args string
	if err := json.Unmarshal(asst.ToolCalls[0].Function.Arguments, &args); err != nil || args != `{"city":"Paris"}` {
		t.Errorf("arguments = %s (%v)", asst.ToolCalls[0].Function.Arguments, err)
	}
	if !strings.Contains(string(asst.Raw), `"reasoning_content": "<think>call</think>"`) {
		t.Errorf("assistant raw lost extra keys: %s", asst.Raw)
	}
	if r.Messages[3].ToolCallID != "call_1" || r.Tools[0].Function.Name != "get_weather" || r.Tools[0].Function.Strict == nil {
		t.Errorf("tool message/tool = %+v / %+v", r.Messages[3], r.Tools[0])
	}
	if !r.Stream || !r.IncludeUsage() || !r.StreamOptions.ContinuousUsageStats {
		t.Errorf("stream options = %v %+v", r.Stream, r.StreamOptions)
	}
	if *r.N != 2 || *r.MaxTokensLimit() != 64 || *r.Temperature != 0.7 || *r.TopP != 0.9 || *r.Seed != 42 {
		t.Errorf("sampling = n %d limit %d temp %v top_p %v seed %d", *r.N, *r.MaxTokensLimit(), *r.Temperature, *r.TopP, *r.Seed)
	}
	if *r.FrequencyPenalty != 0.1 || *r.PresencePenalty != -0.1 || r.LogitBias["50256"] != -100 {
		t.Errorf("penalties/logit_bias = %v %v %v", *r.FrequencyPenalty, *r.PresencePenalty, r.LogitBias)
	}
	if len(r.Stop.Strings) != 2 || !*r.Logprobs || *r.TopLogprobs != 3 || r.User != "u1" || *r.ParallelToolCalls {
		t.Errorf("stop/logprobs/user = %+v %v %v %q", r.Stop, *r.Logprobs, *r.TopLogprobs, r.User)
	}
	if string(r.ToolChoiceRaw) != `"auto"` || string(r.Metadata) != `{"k": "v"}` || string(r.Store) != "false" {
		t.Errorf("raw fields = %s %s %s", r.ToolChoiceRaw, r.Metadata, r.Store)
	}
	if *r.TopK != -1 {
		t.Errorf("top_k = %d, want 0 normalised to -1", *r.TopK)
	}
	if *r.MinP != 0.05 || *r.RepetitionPenalty != 1.1 || *r.MinTokens != 4 || *r.IgnoreEOS || !*r.IncludeStopStrInOutput || *r.SkipSpecialTokens {
		t.Errorf("ext = %+v", r.CommonExt)
	}
	if string(r.ChatTemplateKwargs) != `{"enable_thinking": false}` || !*r.AddGenerationPrompt {
		t.Errorf("template args = %s", r.ChatTemplateKwargs)
	}
	nv := r.NvExt
	if nv == nil || !nv.HasAnnotation(AnnotationRequestID) || nv.Annotations[1] != "query_instance_id:abc" ||
		*nv.BackendInstanceID != 18446744073709551615 || *nv.GreedSampling || nv.ExtraFields[0] != "worker_id" ||
		string(nv.AgentHints) != `{"priority": 1}` {
		t.Errorf("nvext = %+v", nv)
	}
}

func FuzzDecodeChat(f *testing.F) {
	f.Add([]byte(fullChat))
	for _, tc := range decodeErrorTests {
		f.Add([]byte(tc.body))
	}
	for _, tc := range chatRuleTests {
		f.Add([]byte(chatBody(tc.extra)))
	}
	f.Add([]byte(chatBody(`"functions":[]`)))
	f.Add([]byte(chatBody(`"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":false}}`)))
	for _, body := range fastPathCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, opts := range []DecodeOptions{{}, {AllowUnknownFields: true, DisableNvExt: true}} {
			// The fast path answers exactly as encoding/json does.
			checkSameAsSlow(t, body, opts)
			r, err := DecodeChat(body, opts)
			if err == nil {
				if r == nil {
					t.Fatal("nil request without error")
				}
				if _, err := r.GuidedDecoding(); err != nil {
					t.Fatalf("decoded request fails GuidedDecoding: %v", err)
				}
				continue
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
			}
		}
	})
}

func TestUnionRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
		out  string // the re-encoding; in when empty
		dst  func() any
	}{
		{"content string", `"hi <b>"`, `"hi \u003cb\u003e"`, func() any { return new(Content) }},
		{"content null", `null`, "", func() any { return new(Content) }},
		{"content empty parts", `[]`, "", func() any { return new(Content) }},
		{"content parts kept raw", `[{"type":"text","text":"a","cache_control":{"x":1}},{"type":"image_url","image_url":{"url":"u"}}]`, "", func() any { return new(Content) }},
		{"stop string", `"END"`, `["END"]`, func() any { return new(Stop) }},
		{"stop list", `["a","b"]`, "", func() any { return new(Stop) }},
		{"stop ids", `[1,2]`, "", func() any { return new(Stop) }},
		{"prompt string", `"p"`, "", func() any { return new(Prompt) }},
		{"prompt empty string", `""`, "", func() any { return new(Prompt) }},
		{"prompt strings", `["a","b"]`, "", func() any { return new(Prompt) }},
		{"prompt tokens", `[1,2,3]`, "", func() any { return new(Prompt) }},
		{"prompt token set", `[[1],[2,3]]`, "", func() any { return new(Prompt) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.dst()
			if err := json.Unmarshal([]byte(tc.in), v); err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.out
			if want == "" {
				want = tc.in
			}
			if string(got) != want {
				t.Errorf("round trip = %s, want %s", got, want)
			}
		})
	}
}

func TestRawKeptByteForByte(t *testing.T) {
	msg := `{ "content" : "<think>x</think> & y",  "role":"assistant", "reasoning_content": "r", "tool_calls": [ {"id":"1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}} ] }`
	tool := `{"type":"function","function":{"name":"f","parameters":{"z":1,"a":{"type":"string"}}},"x-extra":true}`
	body := `{"model":"m","messages":[` + msg + `],"tools":[ ` + tool + ` ]}`
	for _, opts := range []DecodeOptions{{}, {AllowUnknownFields: true}} {
		b := body
		if opts.AllowUnknownFields {
			b = strings.Replace(body, `{"model"`, `{"unknown":1,"model"`, 1) // forces the rebuild path
		}
		r, err := DecodeChat([]byte(b), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(r.Messages[0].Raw); got != msg {
			t.Errorf("message raw = %s\n          want %s", got, msg)
		}
		if got, _ := json.Marshal(r.Messages[0]); !json.Valid(got) || !strings.Contains(string(got), `"reasoning_content"`) {
			t.Errorf("message marshal = %s", got)
		}
		if got := string(r.Tools[0].Raw); got != tool {
			t.Errorf("tool raw = %s\n       want %s", got, tool)
		}
		if r.Messages[0].Role != "assistant" || *r.Messages[0].Content.Text != "<think>x</think> & y" || r.Tools[0].Function.Name != "f" {
			t.Errorf("typed fields = %+v %+v", r.Messages[0], r.Tools[0])
		}
	}
}

// A null inside a prompt or an embeddings input is refused, not read as
// an empty string or token id 0.
func TestNullInsideInputsIsRefused(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","prompt":[1,null,3]}`,
		`{"model":"m","prompt":[[1,2],[3,null]]}`,
		`{"model":"m","prompt":["a",null]}`,
	} {
		_, err := DecodeCompletion([]byte(body), DecodeOptions{})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Param != "prompt" || !strings.Contains(ve.Message, "null") {
			t.Errorf("%s: %v, want a 400 on prompt naming the null", body, err)
		}
	}
	for _, body := range []string{
		`{"model":"m","input":[4,null]}`,
		`{"model":"m","input":[[1],[4,null]]}`,
		`{"model":"m","input":["x",null]}`,
	} {
		_, err := DecodeEmbedding([]byte(body), DecodeOptions{})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Param != "input" || !strings.Contains(ve.Message, "null") {
			t.Errorf("%s: %v, want a 400 on input naming the null", body, err)
		}
	}
}
