package vllmapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// testServer runs a Server over a deterministic mocker engine (block
// size 4, context 256) until the test ends and returns it once /health
// answers 200.
func testServer(t *testing.T, mod func(*mocker.Config, *Config)) *Server {
	t.Helper()
	return testServerWith(t, mod, nil)
}

// testServerWith is testServer with setup applied to the Server before
// it runs.
func testServerWith(t *testing.T, mod func(*mocker.Config, *Config), setup func(*Server)) *Server {
	t.Helper()
	mc := mocker.DefaultConfig()
	mc.BlockSize, mc.NumGPUBlocks, mc.ContextLength = 4, 64, 256
	mc.SpeedupRatio = 20
	mc.Deterministic = true
	cfg := Config{Model: "mock-model", ContextLength: 256, BlockSize: 4, NumGPUBlocks: 64,
		EOSTokenIDs: []uint32{2}, KVEvents: KVEventsConfig{Port: -1, ReplayPort: -1}}
	if mod != nil {
		mod(&mc, &cfg)
	}
	eng, err := mocker.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, eng)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(s)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testenv.WaitFor(t, 5*time.Second, "health 200", func() bool {
		resp, err := http.Get(s.url("/health"))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

func (s *Server) url(path string) string { return "http://" + s.HTTPAddr() + path }

func post(t *testing.T, s *Server, path string, body any) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.url(path), "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// events splits an SSE body into its data payloads.
func events(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, line)
		}
	}
	return out
}

// expected is what a deterministic engine generates for a prompt of
// promptLen tokens with seed, for choice, at most n tokens.
func expected(promptLen int, seed int64, choice, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = mocker.DeterministicToken(mocker.ChoiceSeed(seed, choice), promptLen+i)
	}
	return out
}

func prompt(n int) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(100 + i)
	}
	return p
}

// chunk is a streamed chunk, decoded with the fields' presence kept.
type chunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []json.RawMessage `json:"choices"`
	Usage   *usageInfo        `json:"usage"`
}

type choiceJSON struct {
	Index          int             `json:"index"`
	Text           *string         `json:"text"`
	FinishReason   *string         `json:"finish_reason"`
	StopReason     json.RawMessage `json:"stop_reason"`
	PromptTokenIDs []uint32        `json:"prompt_token_ids"`
	TokenIDs       []uint32        `json:"token_ids"`
	Logprobs       *struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	} `json:"logprobs"`
}

func TestStreamedCompletionWithTokenIDs(t *testing.T) {
	s := testServer(t, nil)
	p := prompt(10)
	resp, body := post(t, s, "/v1/completions", map[string]any{
		"model": "mock-model", "prompt": p, "max_tokens": 5, "seed": 7, "stream": true,
		"return_token_ids": true, "stream_options": map[string]any{"include_usage": true},
		"temperature": 0.7, "top_p": 0.9, "top_k": 20, "skip_special_tokens": true, "detokenize": false,
		"some_unknown_field": 1,
	})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	evs := events(t, body)
	if len(evs) < 3 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events: %q", evs)
	}
	var ids []uint32
	var finish []string
	var id string
	for k, ev := range evs[:len(evs)-2] {
		var c chunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.ID, "cmpl-") || c.Object != "text_completion" || c.Model != "mock-model" || c.Created == 0 || len(c.Choices) != 1 {
			t.Fatalf("chunk %d: %s", k, ev)
		}
		if id == "" {
			id = c.ID
		} else if c.ID != id {
			t.Errorf("chunk %d has id %s, want %s", k, c.ID, id)
		}
		// Every field is present, null when unset (vLLM dumps them all).
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(c.Choices[0], &raw)
		for _, f := range []string{"index", "text", "logprobs", "finish_reason", "stop_reason", "prompt_token_ids", "token_ids"} {
			if _, ok := raw[f]; !ok {
				t.Errorf("chunk %d lacks %s: %s", k, f, ev)
			}
		}
		if !strings.Contains(ev, `"usage":null`) {
			t.Errorf("chunk %d: usage is not null: %s", k, ev)
		}
		var ch choiceJSON
		_ = json.Unmarshal(c.Choices[0], &ch)
		if k == 0 && !slices.Equal(ch.PromptTokenIDs, p) {
			t.Errorf("first chunk's prompt_token_ids = %v, want the prompt", ch.PromptTokenIDs)
		}
		if k > 0 && ch.PromptTokenIDs != nil {
			t.Errorf("chunk %d repeats prompt_token_ids", k)
		}
		if ch.TokenIDs == nil || ch.Text == nil || *ch.Text != "" {
			t.Errorf("chunk %d: token_ids %v, text %v", k, ch.TokenIDs, ch.Text)
		}
		ids = append(ids, ch.TokenIDs...)
		if ch.FinishReason != nil {
			finish = append(finish, *ch.FinishReason)
			if string(ch.StopReason) != "null" {
				t.Errorf("stop_reason %s, want null", ch.StopReason)
			}
		}
	}
	if diff := cmp.Diff(expected(10, 7, 0, 5), ids); diff != "" {
		t.Errorf("token ids (-want +got):\n%s", diff)
	}
	if !slices.Equal(finish, []string{"length"}) {
		t.Errorf("finish reasons %v, want [length]", finish)
	}
	var u map[string]any
	if err := json.Unmarshal([]byte(evs[len(evs)-2]), &u); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": id, "object": "text_completion", "created": u["created"], "model": "mock-model", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 10.0, "completion_tokens": 5.0, "total_tokens": 15.0,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0.0}}}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("usage chunk (-want +got):\n%s", diff)
	}
}

func TestStreamWithoutTokenIDsOrUsage(t *testing.T) {
	s := testServer(t, nil)
	_, body := post(t, s, "/v1/completions", map[string]any{"prompt": prompt(4), "max_tokens": 3, "stream": true,
		"stream_options": map[string]any{"continuous_usage_stats": true}})
	evs := events(t, body)
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	for _, ev := range evs[:len(evs)-1] {
		var c chunk
		_ = json.Unmarshal([]byte(ev), &c)
		if len(c.Choices) != 1 || c.Usage == nil {
			t.Fatalf("want one choice and continuous usage: %s", ev)
		}
		var ch choiceJSON
		_ = json.Unmarshal(c.Choices[0], &ch)
		if ch.TokenIDs != nil {
			t.Errorf("token_ids without return_token_ids: %s", ev)
		}
	}
}

func TestUnaryCompletionWithChoices(t *testing.T) {
	s := testServer(t, nil)
	p := prompt(6)
	resp, body := post(t, s, "/v1/completions", map[string]any{"prompt": p, "max_tokens": 4, "seed": 3, "n": 2, "return_token_ids": true})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Model   string       `json:"model"`
		Choices []choiceJSON `json:"choices"`
		Usage   usageInfo    `json:"usage"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.ID, "cmpl-") || got.Object != "text_completion" || got.Model != "mock-model" || len(got.Choices) != 2 {
		t.Fatalf("response %s", body)
	}
	for i, c := range got.Choices {
		if c.Index != i || c.FinishReason == nil || *c.FinishReason != "length" || !slices.Equal(c.PromptTokenIDs, p) {
			t.Errorf("choice %d: %s", i, body)
		}
		if diff := cmp.Diff(expected(6, 3, i, 4), c.TokenIDs); diff != "" {
			t.Errorf("choice %d token ids (-want +got):\n%s", i, diff)
		}
	}
	if u := got.Usage; u.PromptTokens != 6 || u.CompletionTokens != 8 || u.TotalTokens != 14 || u.PromptTokensDetails == nil {
		t.Errorf("usage %+v", got.Usage)
	}
	for _, f := range []string{`"service_tier":null`, `"system_fingerprint":null`, `"kv_transfer_params":null`, `"prompt_logprobs":null`} {
		if !bytes.Contains(body, []byte(f)) {
			t.Errorf("response lacks %s: %s", f, body)
		}
	}
}

func TestStopConditions(t *testing.T) {
	p := prompt(8)
	const seed = 11
	gen := expected(8, seed, 0, 40)
	// stop is a token that occurs in the output; first is where.
	var stop uint32
	first := -1
	for i := 3; i < len(gen); i++ {
		if slices.Index(gen, gen[i]) == i {
			stop, first = gen[i], i
			break
		}
	}
	if first < 0 {
		t.Fatal("no usable stop token")
	}
	// stopAt is the output when tok may stop generation at once.
	stopAt := func(from int) (int, bool) {
		for i := from; i < len(gen); i++ {
			if gen[i] == stop {
				return i + 1, true
			}
		}
		return 0, false
	}
	later, laterOK := stopAt(first + 1)
	for _, tc := range []struct {
		name       string
		eos        []uint32
		req        map[string]any
		n          int
		finish     string
		stopReason string
	}{
		{name: "stop token id", req: map[string]any{"stop_token_ids": []uint32{stop}}, n: first + 1, finish: "stop", stopReason: jsonNum(stop)},
		{name: "min tokens", req: map[string]any{"stop_token_ids": []uint32{stop}, "min_tokens": first + 2},
			n: func() int {
				if laterOK {
					return later
				}
				return 40
			}(), finish: map[bool]string{true: "stop", false: "length"}[laterOK],
			stopReason: map[bool]string{true: jsonNum(stop), false: "null"}[laterOK]},
		{name: "eos", eos: []uint32{stop}, req: map[string]any{}, n: first + 1, finish: "stop", stopReason: "null"},
		{name: "eos ignored", eos: []uint32{stop}, req: map[string]any{"ignore_eos": true}, n: 40, finish: "length", stopReason: "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testServer(t, func(_ *mocker.Config, c *Config) { c.EOSTokenIDs = tc.eos })
			req := map[string]any{"prompt": p, "max_tokens": 40, "seed": seed, "return_token_ids": true}
			for k, v := range tc.req {
				req[k] = v
			}
			resp, body := post(t, s, "/v1/completions", req)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var got struct {
				Choices []choiceJSON `json:"choices"`
			}
			_ = json.Unmarshal(body, &got)
			c := got.Choices[0]
			if diff := cmp.Diff(gen[:tc.n], c.TokenIDs); diff != "" {
				t.Errorf("token ids (-want +got):\n%s", diff)
			}
			if *c.FinishReason != tc.finish || string(c.StopReason) != tc.stopReason {
				t.Errorf("finish %s, stop_reason %s; want %s, %s", *c.FinishReason, c.StopReason, tc.finish, tc.stopReason)
			}
		})
	}
}

func jsonNum(v uint32) string { b, _ := json.Marshal(v); return string(b) }

func TestBadRequests(t *testing.T) {
	s := testServer(t, nil)
	for _, tc := range []struct {
		name   string
		req    map[string]any
		status int
		param  string
	}{
		{"no prompt", map[string]any{}, 400, "prompt"},
		{"empty prompt", map[string]any{"prompt": []int{}}, 400, "prompt"},
		{"string prompt without tokenizer", map[string]any{"prompt": "hello"}, 400, "prompt"},
		{"negative id", map[string]any{"prompt": []int{1, -2}}, 400, "prompt"},
		{"two prompts", map[string]any{"prompt": [][]int{{1}, {2}}}, 400, "prompt"},
		{"max_tokens 0", map[string]any{"prompt": []int{1}, "max_tokens": 0}, 400, "max_tokens"},
		{"over context", map[string]any{"prompt": []int{1, 2}, "max_tokens": 255}, 400, "max_tokens"},
		{"min over max", map[string]any{"prompt": []int{1}, "max_tokens": 2, "min_tokens": 3}, 400, "min_tokens"},
		{"temperature", map[string]any{"prompt": []int{1}, "temperature": -1}, 400, "temperature"},
		{"top_p", map[string]any{"prompt": []int{1}, "top_p": 0}, 400, "top_p"},
		{"n", map[string]any{"prompt": []int{1}, "n": 0}, 400, "n"},
		{"logprobs", map[string]any{"prompt": []int{1}, "logprobs": 21}, 400, "logprobs"},
		{"stream options without stream", map[string]any{"prompt": []int{1}, "stream_options": map[string]any{"include_usage": true}}, 400, "stream_options"},
		{"other model", map[string]any{"prompt": []int{1}, "model": "gpt-x"}, 404, "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, s, "/v1/completions", tc.req)
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.status || e.Error.Message == "" || e.Error.Param == nil || *e.Error.Param != tc.param {
				t.Errorf("status %d: %s; want %d with param %s", resp.StatusCode, body, tc.status, tc.param)
			}
			if tc.status == 400 && e.Error.Type != "BadRequestError" {
				t.Errorf("type %s", e.Error.Type)
			}
		})
	}
}

func TestLogprobs(t *testing.T) {
	s := testServer(t, nil)
	_, body := post(t, s, "/v1/completions", map[string]any{"prompt": prompt(3), "max_tokens": 3, "logprobs": 2, "return_tokens_as_token_ids": true})
	var got struct {
		Choices []choiceJSON `json:"choices"`
	}
	_ = json.Unmarshal(body, &got)
	lp := got.Choices[0].Logprobs
	if lp == nil || len(lp.Tokens) != 3 || len(lp.TokenLogprobs) != 3 || len(lp.TopLogprobs) != 3 || len(lp.TextOffset) != 3 {
		t.Fatalf("logprobs: %s", body)
	}
	for i, tok := range lp.Tokens {
		if !strings.HasPrefix(tok, "token_id:") || len(lp.TopLogprobs[i]) != 2 || lp.TokenLogprobs[i] >= 0 {
			t.Errorf("token %d: %s", i, body)
		}
	}
}

func TestTokenizerFuncs(t *testing.T) {
	s := testServer(t, func(_ *mocker.Config, c *Config) {
		c.Tokenize = func(text string, _ bool) ([]uint32, error) {
			var ids []uint32
			for _, r := range text {
				ids = append(ids, uint32(r))
			}
			return ids, nil
		}
		c.Detokenize = func(ids []uint32, _ bool) (string, error) {
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(strings.Repeat("x", int(id%3)+1))
			}
			return b.String(), nil
		}
	})
	resp, body := post(t, s, "/tokenize", map[string]any{"prompt": "abc"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"tokens":[97,98,99]`)) || !bytes.Contains(body, []byte(`"count":3`)) {
		t.Errorf("tokenize: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, s, "/detokenize", map[string]any{"tokens": []int{0, 1}})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"prompt":"xxx"`)) {
		t.Errorf("detokenize: %d %s", resp.StatusCode, body)
	}
	// A string prompt is tokenized; the streamed text adds up to the
	// unary text of the same request.
	req := map[string]any{"prompt": "hello", "max_tokens": 6, "seed": 1}
	_, body = post(t, s, "/v1/completions", req)
	var unary struct {
		Choices []choiceJSON `json:"choices"`
	}
	_ = json.Unmarshal(body, &unary)
	req["stream"] = true
	_, body = post(t, s, "/v1/completions", req)
	var text strings.Builder
	for _, ev := range events(t, body) {
		var c chunk
		if json.Unmarshal([]byte(ev), &c) != nil || len(c.Choices) == 0 {
			continue
		}
		var ch choiceJSON
		_ = json.Unmarshal(c.Choices[0], &ch)
		text.WriteString(*ch.Text)
	}
	if unary.Choices[0].Text == nil || *unary.Choices[0].Text == "" || text.String() != *unary.Choices[0].Text {
		t.Errorf("streamed text %q, unary %v", text.String(), unary.Choices[0].Text)
	}
}

func TestAbortOnDisconnect(t *testing.T) {
	var eng *mocker.Engine
	s := testServer(t, func(m *mocker.Config, _ *Config) { m.SpeedupRatio = 1 })
	eng = s.eng
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b, _ := json.Marshal(map[string]any{"prompt": prompt(8), "max_tokens": 200, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url("/v1/completions"), bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first line %q, %v", line, err)
	}
	if st := eng.Stats(); st.Running != 1 || eng.IsQuiescent() {
		t.Fatalf("running %d while streaming", st.Running)
	}
	cancel()
	resp.Body.Close()
	start := time.Now()
	testenv.WaitFor(t, time.Second, "the request to leave the engine", func() bool { return eng.Stats().Running == 0 && eng.IsQuiescent() })
	t.Logf("aborted after %v", time.Since(start))
}

func TestHealthModelsAndMetrics(t *testing.T) {
	s := testServer(t, nil)
	resp, err := http.Get(s.url("/v1/models"))
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "mock-model" || models.Data[0].Object != "model" ||
		models.Data[0].MaxModelLen != 256 || models.Data[0].OwnedBy != "vllm" {
		t.Errorf("models: %+v", models)
	}
	post(t, s, "/v1/completions", map[string]any{"prompt": prompt(5), "max_tokens": 2})
	resp, err = http.Get(s.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`vllm:num_requests_running{engine="0",model_name="mock-model"} 0`,
		`vllm:num_requests_waiting{engine="0",model_name="mock-model"} 0`,
		`vllm:kv_cache_usage_perc{engine="0",model_name="mock-model"}`,
		`vllm:gpu_cache_usage_perc{engine="0",model_name="mock-model"}`,
		`vllm:prompt_tokens_total{engine="0",model_name="mock-model"} 5`,
		`vllm:generation_tokens_total{engine="0",model_name="mock-model"} 2`,
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="mock-model"} 1`,
		`vllm:cache_config_info{block_size="4"`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
	resp, err = http.Get(s.url("/nope"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

func TestHealthIs503WhileStarting(t *testing.T) {
	mc := mocker.DefaultConfig()
	mc.StartupTime = 300 * time.Millisecond
	eng, err := mocker.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Model: "m", ContextLength: 64, BlockSize: 64, KVEvents: KVEventsConfig{Port: -1, ReplayPort: -1}}, eng)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	status := func() int {
		resp, err := http.Get(s.url("/health"))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(); got != http.StatusServiceUnavailable {
		t.Errorf("health while starting: %d", got)
	}
	resp, body := post(t, s, "/v1/completions", map[string]any{"prompt": []int{1}})
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("completion while starting: %d %s", resp.StatusCode, body)
	}
	testenv.WaitFor(t, 5*time.Second, "health 200", func() bool { return status() == 200 })
}

func TestConfigValidate(t *testing.T) {
	err := Config{Port: -1, KVEvents: KVEventsConfig{Port: -1, ReplayPort: 5, Encoding: "json"}}.Validate()
	for _, want := range []string{"port -1", "model name", "context length", "block size", "replay port needs", "encoding"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want %q", err, want)
		}
	}
}

// /tokenize with messages renders through Config.TokenizeChat (vLLM's
// TokenizeChatRequest): add_generation_prompt defaults to true, a
// conversation it refuses is a 400, and without it the answer is 501.
func TestTokenizeChat(t *testing.T) {
	var got *backend.TokenizeRequest
	s := testServer(t, func(_ *mocker.Config, c *Config) {
		c.TokenizeChat = func(req *backend.TokenizeRequest) ([]uint32, error) {
			got = req
			if strings.Contains(string(req.Messages), "bad") {
				return nil, fmt.Errorf("%w: roles must alternate", ErrBadChat)
			}
			return []uint32{4, 5}, nil
		}
	})
	resp, body := post(t, s, "/tokenize", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}},
		"chat_template_kwargs": map[string]bool{"x": true}})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"tokens":[4,5]`)) || got == nil || !got.AddGenerationPrompt ||
		string(got.ChatTemplateKwargs) != `{"x":true}` {
		t.Errorf("tokenize messages: %d %s, request %+v", resp.StatusCode, body, got)
	}
	resp, body = post(t, s, "/tokenize", map[string]any{"messages": []map[string]string{{"role": "user", "content": "bad"}}, "add_generation_prompt": false})
	if resp.StatusCode != 400 || !bytes.Contains(body, []byte("roles must alternate")) || got.AddGenerationPrompt {
		t.Errorf("refused conversation: %d %s", resp.StatusCode, body)
	}
	plain := testServer(t, nil)
	if resp, body := post(t, plain, "/tokenize", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}); resp.StatusCode != 501 {
		t.Errorf("without a chat template: %d %s", resp.StatusCode, body)
	}
}
