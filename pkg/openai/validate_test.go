package openai

import (
	"math"
	"strings"
	"testing"
)

// chatRuleTests break one §1.6 rule each on a chat request. extra is added
// to chatBody; body, when set, replaces it.
var chatRuleTests = []struct {
	name, extra, body string
	exact, contains   string
}{
	{name: "model empty", body: `{"model":" ","messages":[{"role":"user","content":"x"}]}`, exact: "Validation: model must not be empty"},
	{name: "model missing", body: `{"messages":[{"role":"user","content":"x"}]}`, exact: "Validation: model must not be empty"},
	{name: "messages empty", body: `{"model":"m","messages":[]}`, exact: "Validation: messages must not be empty"},
	{name: "messages missing", body: `{"model":"m"}`, exact: "Validation: messages must not be empty"},
	{name: "message null", body: `{"model":"m","messages":[{"role":"user"},null]}`, exact: "Validation: messages[1]: expected an object, got null"},
	{name: "role missing", body: `{"model":"m","messages":[{"content":"x"}]}`, exact: "Validation: messages[0]: role is required"},
	{name: "role unknown", body: `{"model":"m","messages":[{"role":"user"},{"role":"bot"}]}`,
		exact: "Validation: messages[1]: unknown role `bot`, expected one of `system`, `developer`, `user`, `assistant`, `tool`, `function`"},
	{name: "temperature high", extra: `"temperature":5`, exact: "Validation: temperature must be between 0 and 2, got 5"},
	{name: "temperature low", extra: `"temperature":-0.5`, exact: "Validation: temperature must be between 0 and 2, got -0.5"},
	{name: "top_p", extra: `"top_p":1.5`, exact: "Validation: top_p must be between 0 and 1, got 1.5"},
	{name: "min_p", extra: `"min_p":-0.1`, exact: "Validation: min_p must be between 0 and 1, got -0.1"},
	{name: "frequency_penalty", extra: `"frequency_penalty":2.5`, exact: "Validation: frequency_penalty must be between -2 and 2, got 2.5"},
	{name: "presence_penalty", extra: `"presence_penalty":-3`, exact: "Validation: presence_penalty must be between -2 and 2, got -3"},
	{name: "repetition_penalty zero", extra: `"repetition_penalty":0`, exact: "Validation: repetition_penalty must be greater than 0 and at most 2, got 0"},
	{name: "repetition_penalty high", extra: `"repetition_penalty":2.01`, contains: "got 2.01"},
	{name: "top_k", extra: `"top_k":-2`, exact: "Validation: top_k must be -1 (disabled) or a positive integer, got -2"},
	{name: "n zero", extra: `"n":0`, exact: "Validation: n must be between 1 and 128, got 0"},
	{name: "n high", extra: `"n":129`, exact: "Validation: n must be between 1 and 128, got 129"},
	{name: "n with temperature 0", extra: `"n":2,"temperature":0`, exact: "Validation: n > 1 requires temperature > 0, got n=2 and temperature=0"},
	{name: "top_logprobs high", extra: `"logprobs":true,"top_logprobs":21`, exact: "Validation: top_logprobs must be between 0 and 20, got 21"},
	{name: "top_logprobs negative", extra: `"logprobs":true,"top_logprobs":-1`, contains: "got -1"},
	{name: "top_logprobs without logprobs", extra: `"top_logprobs":2`, exact: "Validation: top_logprobs requires logprobs to be true"},
	{name: "top_logprobs with logprobs false", extra: `"logprobs":false,"top_logprobs":0`, exact: "Validation: top_logprobs requires logprobs to be true"},
	{name: "logit_bias value", extra: `"logit_bias":{"7":100.5}`, exact: "Validation: logit_bias value for token 7 must be between -100 and 100, got 100.5"},
	{name: "logit_bias key", extra: `"logit_bias":{"12":1,"abc":1}`, exact: "Validation: logit_bias key `abc` is not a token id"},
	{name: "logit_bias negative key", extra: `"logit_bias":{"-1":1}`, contains: "key `-1` is not a token id"},
	{name: "stop too many", extra: `"stop":[` + strings.Repeat(`"s",`, 32) + `"s"]`, exact: "Validation: stop may hold at most 32 sequences, got 33"},
	{name: "stop empty string", extra: `"stop":""`, exact: "Validation: stop sequence at index 0 must not be empty"},
	{name: "stop empty in list", extra: `"stop":["a",""]`, exact: "Validation: stop sequence at index 1 must not be empty"},
	{name: "max_tokens zero", extra: `"max_tokens":0`, exact: "Validation: max_tokens must be at least 1, got 0"},
	{name: "max_completion_tokens zero", extra: `"max_completion_tokens":0`, exact: "Validation: max_completion_tokens must be at least 1, got 0"},
	{name: "max_tokens negative", extra: `"max_tokens":-5`, contains: "got -5"},
	{name: "stream_options without stream", extra: `"stream_options":{"include_usage":true}`, exact: "Validation: stream_options can only be set when stream is true"},
	{name: "stream_options stream false", extra: `"stream":false,"stream_options":{}`, exact: "Validation: stream_options can only be set when stream is true"},
	{name: "min_tokens over max_tokens", extra: `"min_tokens":10,"max_tokens":5`, exact: "Validation: min_tokens must not exceed max_tokens, got min_tokens=10 and max_tokens=5"},
	{name: "min_tokens over max_completion_tokens", extra: `"min_tokens":10,"max_tokens":50,"max_completion_tokens":5`, contains: "max_completion_tokens=5"},
	{name: "chat_template_args not object", extra: `"chat_template_args":[1]`, exact: "Validation: chat_template_args must be a JSON object"},
	{name: "chat_template_kwargs not object", extra: `"chat_template_kwargs":"x"`, exact: "Validation: chat_template_kwargs must be a JSON object"},
	{name: "chat_template_args both", extra: `"chat_template_args":{},"chat_template_kwargs":{}`, exact: "Validation: chat_template_kwargs is an alias of chat_template_args; set only one"},
	{name: "chat_template nested", extra: `"chat_template_kwargs":{"chat_template":"{{x}}"}`, exact: "Validation: `chat_template` is not supported inside chat_template_kwargs"},
	{name: "bad response_format", extra: `"response_format":{"type":"json_schema","json_schema":{"name":"","schema":{}}}`, exact: "Validation: `response_format.json_schema.name` must not be empty"},
}

func TestChatRules(t *testing.T) {
	for _, tc := range chatRuleTests {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if body == "" {
				body = chatBody(tc.extra)
			}
			_, err := DecodeChat([]byte(body), DecodeOptions{})
			checkValidation(t, err, tc.exact, tc.contains)
		})
	}
}

func TestCompletionRules(t *testing.T) {
	tests := []struct {
		name, extra, body string
		exact, contains   string
	}{
		{name: "model empty", body: `{"model":"","prompt":"x"}`, exact: "Validation: model must not be empty"},
		{name: "prompt missing", body: `{"model":"m"}`, exact: "Validation: prompt is required"},
		{name: "prompt null", body: `{"model":"m","prompt":null}`, exact: "Validation: prompt is required"},
		{name: "prompt empty list", body: `{"model":"m","prompt":[]}`, exact: "Validation: prompt must not be an empty list"},
		{name: "prompt empty token list", body: `{"model":"m","prompt":[[1],[]]}`, exact: "Validation: prompt[1] must not be an empty token list"},
		{name: "prompts × n", body: `{"model":"m","prompt":["a","b","c"],"n":50}`, exact: "Validation: number of prompts × n must be at most 128, got 3 × 50 = 150"},
		{name: "temperature", extra: `"temperature":2.5`, exact: "Validation: temperature must be between 0 and 2, got 2.5"},
		{name: "top_p", extra: `"top_p":-1`, contains: "top_p must be between 0 and 1"},
		{name: "penalty", extra: `"frequency_penalty":-2.5`, contains: "frequency_penalty"},
		{name: "n", extra: `"n":200`, exact: "Validation: n must be between 1 and 128, got 200"},
		{name: "n with temperature 0", extra: `"n":3,"temperature":0`, contains: "n > 1 requires temperature > 0"},
		{name: "logprobs", extra: `"logprobs":6`, exact: "Validation: logprobs must be between 0 and 5, got 6"},
		{name: "logprobs negative", extra: `"logprobs":-1`, contains: "got -1"},
		{name: "best_of range", extra: `"best_of":21`, exact: "Validation: best_of must be between 0 and 20, got 21"},
		{name: "best_of below n", extra: `"best_of":2,"n":3`, exact: "Validation: best_of must be greater than or equal to n, got best_of=2 and n=3"},
		{name: "logit_bias", extra: `"logit_bias":{"1":-101}`, contains: "got -101"},
		{name: "stop", extra: `"stop":[""]`, contains: "stop sequence at index 0"},
		{name: "max_tokens", extra: `"max_tokens":0`, exact: "Validation: max_tokens must be at least 1, got 0"},
		{name: "top_k", extra: `"top_k":-7`, contains: "top_k"},
		{name: "min_p", extra: `"min_p":2`, contains: "min_p"},
		{name: "repetition_penalty", extra: `"repetition_penalty":-1`, contains: "repetition_penalty"},
		{name: "min_tokens", extra: `"min_tokens":9,"max_tokens":8`, exact: "Validation: min_tokens must not exceed max_tokens, got min_tokens=9 and max_tokens=8"},
		{name: "stream_options", extra: `"stream_options":{"include_usage":true}`, exact: "Validation: stream_options can only be set when stream is true"},
		{name: "guided conflict", extra: `"guided_regex":"a+","guided_choice":["a"]`, exact: "Validation: only one guided-decoding constraint can be set; received: regex, choice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if body == "" {
				body = completionBody(tc.extra)
			}
			_, err := DecodeCompletion([]byte(body), DecodeOptions{})
			checkValidation(t, err, tc.exact, tc.contains)
		})
	}
}

func TestRulesAccept(t *testing.T) {
	chat := []string{
		`"temperature":0`,
		`"temperature":0,"n":1`,
		`"temperature":2,"top_p":0,"min_p":1,"frequency_penalty":-2,"presence_penalty":2`,
		`"n":128`,
		`"n":4`,
		`"repetition_penalty":2`,
		`"top_k":-1`,
		`"top_k":50`,
		`"logprobs":true,"top_logprobs":0`,
		`"logprobs":true,"top_logprobs":20`,
		`"logit_bias":{"0":-100,"4294967295":100}`,
		`"stop":[` + strings.Repeat(`"s",`, 31) + `"s"]`,
		`"stop":[]`,
		`"stop":[1,2,3]`,
		`"max_tokens":1,"min_tokens":1`,
		`"stream":true,"stream_options":{"include_usage":false}`,
		`"chat_template_args":{"enable_thinking":true}`,
		`"messages":[{"role":"system"},{"role":"developer"},{"role":"user"},{"role":"assistant"},{"role":"tool"},{"role":"function"}]`,
	}
	for _, extra := range chat {
		if _, err := DecodeChat([]byte(chatBody(extra)), DecodeOptions{}); err != nil {
			t.Errorf("chat %s: %v", extra, err)
		}
	}
	completion := []string{
		`"prompt":""`,
		`"prompt":["a",""]`,
		`"prompt":[1,2]`,
		`"prompt":[[1],[2,3]]`,
		`"prompt":["a","b"],"n":64`,
		`"logprobs":0`,
		`"logprobs":5`,
		`"best_of":0`,
		`"best_of":20,"n":20`,
		`"echo":true,"suffix":"x"`,
	}
	for _, extra := range completion {
		if _, err := DecodeCompletion([]byte(completionBody(extra)), DecodeOptions{}); err != nil {
			t.Errorf("completion %s: %v", extra, err)
		}
	}
}

func TestValidateNormalisesTopK(t *testing.T) {
	zero := 0
	r := &ChatCompletionRequest{Model: "m", Messages: []Message{{Role: "user"}}}
	r.TopK = &zero
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if *r.TopK != -1 {
		t.Errorf("top_k = %d, want -1", *r.TopK)
	}
	c := &CompletionRequest{Model: "m", Prompt: Prompt{Tokens: []uint32{1}}}
	c.TopK = new(int)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if *c.TopK != -1 {
		t.Errorf("completion top_k = %d, want -1", *c.TopK)
	}
	// A constructed request is checked the same way, NaN included.
	nan := math.NaN()
	r.Temperature = &nan
	checkValidation(t, r.Validate(), "", "temperature must be between 0 and 2")
	c.Prompt = Prompt{Tokens: []uint32{}}
	checkValidation(t, c.Validate(), "Validation: prompt must not be an empty token list", "")
}
