package preprocessor

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

func decodeCompletion(t *testing.T, body string) *openai.CompletionRequest {
	t.Helper()
	var r openai.CompletionRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	return &r
}

func TestPrepareChatWireRequest(t *testing.T) {
	m := demoModel(t)
	p, err := m.PrepareChat(decodeChat(t, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0.5,"seed":7}`))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs, err := m.Tokenizer().Encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Request.TokenIDs, wantIDs) {
		t.Fatalf("token ids %v, want %v", p.Request.TokenIDs, wantIDs)
	}
	p.Request.TokenIDs = []uint32{1, 2}
	got, _ := json.Marshal(p.Request)
	want := `{"model":"demo","token_ids":[1,2],"stop_conditions":{"max_tokens":5,"stop_token_ids_hidden":[511,508]},` +
		`"sampling_options":{"temperature":0.5,"seed":7},"output_options":{},"eos_token_ids":[511,508],` +
		`"mdc_sum":"` + m.Card().MDCSum + `","annotations":[]}`
	if string(got) != want {
		t.Errorf("wire request\n got  %s\n want %s", got, want)
	}
}

func TestPrepareChatOptions(t *testing.T) {
	m := demoModel(t)
	msgs := `"model":"demo","messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name  string
		body  string
		check func(t *testing.T, r *backend.Request)
	}{
		{"max_completion_tokens wins over max_tokens", `{` + msgs + `,"max_tokens":9,"max_completion_tokens":3}`, func(t *testing.T, r *backend.Request) {
			if r.MaxTokens(0) != 3 {
				t.Errorf("max_tokens %d, want 3", r.MaxTokens(0))
			}
		}},
		{"absent max_tokens is left to the engine", `{` + msgs + `}`, func(t *testing.T, r *backend.Request) {
			if r.StopConditions.MaxTokens != nil {
				t.Errorf("max_tokens %d, want absent", *r.StopConditions.MaxTokens)
			}
		}},
		{"stop strings, stop ids and stop_token_ids", `{` + msgs + `,"stop":["END","\n\n"],"stop_token_ids":[7]}`, func(t *testing.T, r *backend.Request) {
			sc := r.StopConditions
			if !reflect.DeepEqual(sc.Stop, []string{"END", "\n\n"}) || !reflect.DeepEqual(sc.StopTokenIDs, []uint32{7}) {
				t.Errorf("stop %q ids %v", sc.Stop, sc.StopTokenIDs)
			}
		}},
		{"stop as token ids", `{` + msgs + `,"stop":[5,6]}`, func(t *testing.T, r *backend.Request) {
			if !reflect.DeepEqual(r.StopConditions.StopTokenIDs, []uint32{5, 6}) {
				t.Errorf("stop ids %v", r.StopConditions.StopTokenIDs)
			}
		}},
		{"ignore_eos clears every stop and the EOS list", `{` + msgs + `,"stop":"END","ignore_eos":true,"stop_token_ids":[7]}`, func(t *testing.T, r *backend.Request) {
			sc := r.StopConditions
			if sc.Stop != nil || sc.StopTokenIDs != nil || sc.StopTokenIDsHidden != nil || len(r.EOSTokenIDs) != 0 || sc.IgnoreEOS == nil || !*sc.IgnoreEOS {
				t.Errorf("stop conditions %+v eos %v", sc, r.EOSTokenIDs)
			}
		}},
		{"greed_sampling drops temperature and top_p", `{` + msgs + `,"temperature":0.7,"top_p":0.9,"top_k":5,"nvext":{"greed_sampling":true}}`, func(t *testing.T, r *backend.Request) {
			so := r.SamplingOptions
			if so.Temperature != nil || so.TopP != nil || so.TopK == nil || *so.TopK != 5 {
				t.Errorf("sampling %+v", so)
			}
		}},
		{"logprobs true asks for one", `{` + msgs + `,"logprobs":true}`, func(t *testing.T, r *backend.Request) {
			if lp := r.OutputOptions.Logprobs; lp == nil || *lp != 1 {
				t.Errorf("logprobs %v", lp)
			}
		}},
		{"top_logprobs sets the count", `{` + msgs + `,"logprobs":true,"top_logprobs":4}`, func(t *testing.T, r *backend.Request) {
			if lp := r.OutputOptions.Logprobs; lp == nil || *lp != 4 {
				t.Errorf("logprobs %v", lp)
			}
		}},
		{"sampling and output extensions pass through", `{` + msgs + `,"n":2,"temperature":1,"min_p":0.1,"repetition_penalty":1.1,"frequency_penalty":0.5,"presence_penalty":-0.5,"min_tokens":2,"include_stop_str_in_output":true,"skip_special_tokens":false}`, func(t *testing.T, r *backend.Request) {
			so, sc := r.SamplingOptions, r.StopConditions
			if *so.N != 2 || *so.MinP != 0.1 || *so.RepetitionPenalty != 1.1 || *so.FrequencyPenalty != 0.5 || *so.PresencePenalty != -0.5 ||
				*sc.MinTokens != 2 || !*so.IncludeStopStrInOutput || *r.OutputOptions.SkipSpecialTokens {
				t.Errorf("request %+v", r)
			}
		}},
		{"nvext routing and annotations", `{` + msgs + `,"nvext":{"backend_instance_id":42,"annotations":["formatted_prompt"],"max_thinking_tokens":8}}`, func(t *testing.T, r *backend.Request) {
			if r.Routing == nil || *r.Routing.BackendInstanceID != 42 || !reflect.DeepEqual(r.Annotations, []string{"formatted_prompt"}) || *r.StopConditions.MaxThinkingTokens != 8 {
				t.Errorf("routing %+v annotations %v", r.Routing, r.Annotations)
			}
		}},
		{"response_format json_object becomes guided json", `{` + msgs + `,"response_format":{"type":"json_object"}}`, func(t *testing.T, r *backend.Request) {
			if !strings.Contains(string(r.SamplingOptions.GuidedDecoding), `"json":{"type":"object"}`) {
				t.Errorf("guided %s", r.SamplingOptions.GuidedDecoding)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := m.PrepareChat(decodeChat(t, c.body))
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, p.Request)
		})
	}
}

func TestPrepareChatShortcuts(t *testing.T) {
	m := demoModel(t)
	p, err := m.PrepareChat(decodeChat(t, `{"model":"demo","messages":[{"role":"user","content":"raw text"}],"nvext":{"use_raw_prompt":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Tokenizer().Encode("raw text", false)
	if p.Prompt != "raw text" || !reflect.DeepEqual(p.Request.TokenIDs, want) {
		t.Errorf("raw prompt %q ids %v, want %v", p.Prompt, p.Request.TokenIDs, want)
	}
	p, err = m.PrepareChat(decodeChat(t, `{"model":"demo","messages":[{"role":"user","content":"ignored"}],"nvext":{"token_data":[3,4,5]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Request.TokenIDs, []uint32{3, 4, 5}) {
		t.Errorf("token_data ids %v", p.Request.TokenIDs)
	}
}

func TestPromptOverContextLength(t *testing.T) {
	m := templatedModel(t, "{% for m in messages %}{{ m.content }}{% endfor %}")
	long := strings.Repeat("word ", 100)
	_, err := m.PrepareChat(decodeChat(t, `{"model":"t","messages":[{"role":"user","content":"`+long+`"}]}`))
	var ve *openai.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a 400", err)
	}
	ids, _ := m.Tokenizer().Encode(long, false)
	want := "This model's maximum context length is 64 tokens. However, your messages resulted in " + itoa(len(ids)) + " tokens."
	if !strings.HasPrefix(ve.Message, want) {
		t.Errorf("message %q, want prefix %q", ve.Message, want)
	}
	_, err = m.PrepareCompletion(decodeCompletion(t, `{"model":"t","prompt":"`+long+`"}`))
	if !errors.As(err, &ve) || !strings.Contains(ve.Message, "your prompt resulted in") {
		t.Errorf("completions: got %v", err)
	}
	short, _ := m.Tokenizer().Encode("hi", false)
	_, err = m.PrepareChat(decodeChat(t, `{"model":"t","messages":[{"role":"user","content":"hi"}],"max_tokens":100}`))
	wantRoom := "However, you requested " + itoa(len(short)+100) + " tokens (" + itoa(len(short)) + " in the messages, 100 in the completion)"
	if !errors.As(err, &ve) || !strings.Contains(ve.Message, wantRoom) {
		t.Errorf("max_tokens beyond the context: got %v, want %q", err, wantRoom)
	}
	if _, err := m.PrepareChat(decodeChat(t, `{"model":"t","messages":[{"role":"user","content":"hi"}],"max_tokens":`+itoa(64-len(short))+`}`)); err != nil {
		t.Errorf("max_tokens that exactly fills the context: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestPrepareCompletionPrompts(t *testing.T) {
	m := demoModel(t)
	one, _ := m.Tokenizer().Encode("one", true)
	two, _ := m.Tokenizer().Encode("two", true)
	cases := []struct {
		body string
		want [][]uint32
	}{
		{`{"model":"demo","prompt":"one"}`, [][]uint32{one}},
		{`{"model":"demo","prompt":["one","two"]}`, [][]uint32{one, two}},
		{`{"model":"demo","prompt":[10,11,12]}`, [][]uint32{{10, 11, 12}}},
		{`{"model":"demo","prompt":[[10],[11,12]]}`, [][]uint32{{10}, {11, 12}}},
	}
	for _, c := range cases {
		preps, err := m.PrepareCompletion(decodeCompletion(t, c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		var got [][]uint32
		for i, p := range preps {
			if p.Index != i {
				t.Errorf("%s: prompt %d has index %d", c.body, i, p.Index)
			}
			got = append(got, p.Request.TokenIDs)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ids %v, want %v", c.body, got, c.want)
		}
	}
	_, err := m.PrepareCompletion(decodeCompletion(t, `{"model":"demo","prompt":[1,99999]}`))
	var ve *openai.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Message, "token id 99999 is out of range") {
		t.Errorf("out-of-vocabulary id: got %v", err)
	}
}

// TestSpecialTokensOnce checks, with a real Llama tokenizer (add_bos_token
// true), that a completions text prompt gets BOS as transformers'
// tokenizer(text) adds it, and that a chat prompt whose template writes
// bos_token gets exactly one BOS (tokenized without special tokens).
func TestSpecialTokensOnce(t *testing.T) {
	dir := withFiles(t, filepath.Join(needShared(t, "models"), "llama-2-hf-internal-testing"),
		map[string]string{"chat_template.jinja": "{{ bos_token }}[INST] {{ messages[0].content }} [/INST]"})
	m := loadModel(t, dir, modelcard.Options{})
	preps, err := m.PrepareCompletion(decodeCompletion(t, `{"model":"m","prompt":"Hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ids := preps[0].Request.TokenIDs; len(ids) < 2 || ids[0] != 1 || ids[1] == 1 {
		t.Errorf("completions ids %v, want one BOS (1) first", ids)
	}
	p, err := m.PrepareChat(decodeChat(t, `{"model":"m","messages":[{"role":"user","content":"Hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ids := p.Request.TokenIDs; len(ids) < 2 || ids[0] != 1 || ids[1] == 1 {
		t.Errorf("chat ids %v, want exactly one BOS (the template's)", ids)
	}
}
