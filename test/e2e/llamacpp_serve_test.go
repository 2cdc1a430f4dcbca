package e2e

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLlamaCppServes serves the demo GGUF through one llama-server and
// two cmd/worker --engine llamacpp in front of it: "demo" with the
// frontend's processing (the demo model's files) and "demo-q8_0" with
// the engine's (no files: --model-path names the GGUF, the card comes
// from llama-server's /props, prompts from its /apply-template and
// /tokenize, text from its content), behind a frontend on the TCP
// request plane.
func TestLlamaCppServes(t *testing.T) {
	gguf := demoGGUFAs(t, "demo-q8_0.gguf")
	e := startLlama(t, gguf)
	c := newCluster(t, "file", "tcp")
	c.startLlamaWorker("worker", e, "--model-path", demoModel)
	c.startLlamaWorker("worker-native", e, "--native-framework-processing", "--model-path", gguf, "--endpoint", "dyn://dynamo.native.generate")
	f := c.startFrontend()
	f.waitModels(t, "demo", "demo-q8_0")
	tok := demoTokenizer(t)

	conversation := []object{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Héllo, llama! 12345 🙂"}}
	chat := func(model string, extra object) object {
		req := object{"model": model, "temperature": 0, "max_tokens": 24, "messages": conversation}
		for k, v := range extra {
			req[k] = v
		}
		return req
	}

	t.Run("greedy chat and completions are the engine's own tokens", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			req  object
		}{
			{chatPath, chat("demo", nil)},
			{"/v1/completions", object{"model": "demo", "temperature": 0, "max_tokens": 24, "prompt": "Once upon a time, in a GGUF far away"}},
		} {
			ids := f.promptIDs(t, tc.path, tc.req)
			own := engineComplete(t, e, ids, 24, nil)
			want, err := tok.Decode(own.Tokens, true)
			if err != nil || len(own.Tokens) == 0 {
				t.Fatalf("engine tokens %v: %v", own.Tokens, err)
			}
			u := f.unary(t, tc.path, tc.req)
			s := f.stream(t, tc.path, withUsage(tc.req))
			if u.text() != want || s.text != want {
				t.Errorf("%s: unary %q, streamed %q; the engine's own greedy answer %q", tc.path, u.text(), s.text, want)
			}
			if s.usage == nil || s.usage.CompletionTokens != len(own.Tokens) || s.usage.PromptTokens != len(ids) {
				t.Errorf("%s: usage %+v, want %d prompt and %d completion tokens", tc.path, s.usage, len(ids), len(own.Tokens))
			}
		}
	})

	t.Run("max_tokens and stop strings", func(t *testing.T) {
		u := f.unary(t, chatPath, chat("demo", object{"max_tokens": 5}))
		if u.Usage == nil || u.Usage.CompletionTokens != 5 || finishOf(u) != "length" {
			t.Errorf("max_tokens 5: usage %+v, finish %q", u.Usage, finishOf(u))
		}
		full := f.unary(t, chatPath, chat("demo", nil)).text()
		runes := []rune(full)
		if len(runes) < 8 {
			t.Fatalf("answer %q too short to cut", full)
		}
		stop := string(runes[len(runes)/2 : len(runes)/2+2])
		cut := full[:strings.Index(full, stop)]
		for _, stream := range []bool{false, true} {
			req := chat("demo", object{"stop": []string{stop}})
			var text, finish string
			if stream {
				s := f.stream(t, chatPath, req)
				text, finish = s.text, s.finishReason
			} else {
				u := f.unary(t, chatPath, req)
				text, finish = u.text(), finishOf(u)
			}
			if text != cut || finish != "stop" {
				t.Errorf("stop %q (stream %v): %q, finish %q; want %q, stop", stop, stream, text, finish, cut)
			}
		}
	})

	t.Run("a seed with temperature gives the same answer again", func(t *testing.T) {
		sampled := func(seed int) string {
			return f.unary(t, chatPath, chat("demo", object{"temperature": 1.0, "seed": seed, "max_tokens": 16})).text()
		}
		a, b, other := sampled(11), sampled(11), sampled(12)
		if a != b {
			t.Errorf("seed 11 twice: %q and %q", a, b)
		}
		if a == other {
			t.Errorf("seeds 11 and 12 both gave %q: the seed does not reach the engine", a)
		}
	})

	t.Run("logprobs are the engine's n_probs", func(t *testing.T) {
		req := chat("demo", object{"logprobs": true, "top_logprobs": 3, "max_tokens": 6})
		ids := f.promptIDs(t, chatPath, req)
		own := engineComplete(t, e, ids, 6, object{"n_probs": 3})
		resp, body := f.post(t, chatPath, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var r struct {
			Choices []struct {
				Logprobs struct {
					Content []struct {
						Token       string  `json:"token"`
						Logprob     float64 `json:"logprob"`
						TopLogprobs []struct {
							Token   string  `json:"token"`
							Logprob float64 `json:"logprob"`
						} `json:"top_logprobs"`
					} `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%v: %s", err, body)
		}
		got := r.Choices[0].Logprobs.Content
		if len(got) != len(own.Probs) || len(got) == 0 {
			t.Fatalf("%d logprobs, the engine gave %d: %s", len(got), len(own.Probs), body)
		}
		for i, p := range own.Probs {
			if tokenStrings(t, tok, []uint32{p.ID})[0] != got[i].Token || math.Abs(p.Logprob-got[i].Logprob) > 1e-3 || len(got[i].TopLogprobs) != len(p.TopLogprobs) {
				t.Errorf("token %d: %q %.5f (%d alternatives), the engine's %q %.5f (%d)", i, got[i].Token, got[i].Logprob, len(got[i].TopLogprobs),
					tokenStrings(t, tok, []uint32{p.ID})[0], p.Logprob, len(p.TopLogprobs))
				continue
			}
			for j, alt := range p.TopLogprobs {
				if s := tokenStrings(t, tok, []uint32{alt.ID})[0]; s != got[i].TopLogprobs[j].Token || math.Abs(alt.Logprob-got[i].TopLogprobs[j].Logprob) > 1e-3 {
					t.Errorf("token %d alternative %d: %q %.5f, the engine's %q %.5f", i, j, got[i].TopLogprobs[j].Token, got[i].TopLogprobs[j].Logprob, s, alt.Logprob)
				}
			}
		}
	})

	t.Run("native processing: the same prompt and text without the model's files", func(t *testing.T) {
		for _, path := range []string{chatPath, "/v1/completions"} {
			req := func(model string) object {
				if path == chatPath {
					return chat(model, nil)
				}
				return object{"model": model, "temperature": 0, "max_tokens": 24, "prompt": "<|im_start|>user\nTokens, please.<|im_end|>\n"}
			}
			front, native := f.promptIDs(t, path, req("demo")), f.promptIDs(t, path, req("demo-q8_0"))
			if !slices.Equal(front, native) {
				t.Errorf("%s: the frontend's prompt %v, the engine's %v", path, front, native)
			}
			a, b := f.unary(t, path, req("demo")).text(), f.unary(t, path, req("demo-q8_0")).text()
			s := f.stream(t, path, req("demo-q8_0"))
			if a == "" || a != b || s.text != a {
				t.Errorf("%s: frontend processing %q, native %q (streamed %q)", path, a, b, s.text)
			}
		}
		// What needs the model's tokenizer is refused clearly.
		resp, body := f.post(t, chatPath, chat("demo-q8_0", object{"logprobs": true}))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "tokenizer") {
			t.Errorf("logprobs on the native model: %d %s; want a 400 naming the tokenizer", resp.StatusCode, body)
		}
	})

	t.Run("a client's hang-up frees the engine's slot", func(t *testing.T) {
		resp := f.openChatStream(t, 4000, 3)
		if n := slotsProcessing(t, e); n != 1 {
			t.Fatalf("%d slots processing while the stream is open, want 1", n)
		}
		resp.Body.Close()
		waitFor(t, 2*time.Second, "the engine's slot to be freed", func() bool { return slotsProcessing(t, e) == 0 }, f.process)
	})

	t.Run("requests llama.cpp cannot honour get a 400", func(t *testing.T) {
		for _, extra := range []object{{"n": 2, "temperature": 0.7}, {"stop_token_ids": []int{42}}} {
			resp, body := f.post(t, chatPath, chat("demo", extra))
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "llamacpp") {
				t.Errorf("%v: %d %s; want a 400 saying what llama.cpp cannot do", extra, resp.StatusCode, body)
			}
		}
		// And the engine serves the next request.
		if u := f.unary(t, chatPath, chat("demo", object{"max_tokens": 3})); u.Usage == nil || u.Usage.CompletionTokens != 3 {
			t.Errorf("after the refusals: usage %+v", u.Usage)
		}
	})
}

// withUsage asks a streamed request for its usage.
func withUsage(req object) object {
	r := object{"stream_options": object{"include_usage": true}}
	for k, v := range req {
		r[k] = v
	}
	return r
}

// finishOf is a unary answer's first finish reason.
func finishOf(r response) string {
	if len(r.Choices) == 0 || r.Choices[0].FinishReason == nil {
		return ""
	}
	return *r.Choices[0].FinishReason
}
