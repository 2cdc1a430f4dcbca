package vllmapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge/vllmwire"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// usageInfo is an answer's usage as the tests decode it.
type usageInfo = vllmwire.UsageInfo

// genChunk is a GenerateStreamResponse, its fields' presence kept.
type genChunk struct {
	RequestID string `json:"request_id"`
	Choices   []struct {
		Index        int             `json:"index"`
		FinishReason *string         `json:"finish_reason"`
		TokenIDs     []uint32        `json:"token_ids"`
		Text         *string         `json:"text"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage *usageInfo `json:"usage"`
}

// /inference/v1/generate streams token ids as vLLM does: one chunk per
// output with new tokens and no text, the finish with the last tokens,
// then the usage chunk and [DONE]; the unary answer is one
// GenerateResponse; without max_tokens the answer may fill the context.
func TestGenerateEndpoint(t *testing.T) {
	s := testServer(t, nil)
	p := prompt(6)
	resp, body := post(t, s, "/inference/v1/generate", map[string]any{"model": "mock-model", "token_ids": p, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "sampling_params": map[string]any{"max_tokens": 4, "seed": 5, "logprobs": 1}})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	evs := events(t, body)
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("the stream ends with %q", evs[len(evs)-1])
	}
	var ids []uint32
	var finishes []string
	var usage *usageInfo
	for _, ev := range evs[:len(evs)-1] {
		var c genChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil || !strings.HasPrefix(c.RequestID, "generate-tokens-") {
			t.Fatalf("chunk %s: %v", ev, err)
		}
		if c.Usage != nil {
			usage = c.Usage
			continue
		}
		ch := c.Choices[0]
		if len(ch.TokenIDs) == 0 || ch.Text != nil {
			t.Errorf("chunk %s: want new token ids and no text", ev)
		}
		var lp struct {
			Content []struct {
				Token string `json:"token"`
			} `json:"content"`
		}
		if json.Unmarshal(ch.Logprobs, &lp) != nil || len(lp.Content) != len(ch.TokenIDs) || !strings.HasPrefix(lp.Content[0].Token, "token_id:") {
			t.Errorf("logprobs %s", ch.Logprobs)
		}
		ids = append(ids, ch.TokenIDs...)
		if ch.FinishReason != nil {
			finishes = append(finishes, *ch.FinishReason)
		}
	}
	if want := expected(len(p), 5, 0, 4); !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	if !slices.Equal(finishes, []string{"length"}) {
		t.Errorf("finishes %v, want one length, on the last tokens' chunk", finishes)
	}
	if usage == nil || usage.PromptTokens != 6 || usage.CompletionTokens != 4 {
		t.Errorf("usage %+v", usage)
	}

	resp, body = post(t, s, "/inference/v1/generate", map[string]any{"token_ids": p, "sampling_params": map[string]any{"max_tokens": 3, "seed": 5}})
	var unary struct {
		Choices []struct {
			FinishReason string   `json:"finish_reason"`
			TokenIDs     []uint32 `json:"token_ids"`
		} `json:"choices"`
		KVTransferParams any `json:"kv_transfer_params"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &unary) != nil || len(unary.Choices) != 1 ||
		!slices.Equal(unary.Choices[0].TokenIDs, expected(len(p), 5, 0, 3)) || unary.Choices[0].FinishReason != "length" {
		t.Errorf("unary: %d %s", resp.StatusCode, body)
	}

	// No max_tokens: the context's room (256 - 6), not vLLM's dataclass
	// default of 16.
	_, body = post(t, s, "/inference/v1/generate", map[string]any{"token_ids": p, "sampling_params": map[string]any{"ignore_eos": true}})
	if json.Unmarshal(body, &unary) != nil || len(unary.Choices[0].TokenIDs) != 250 {
		t.Errorf("without max_tokens: %d tokens, want 250", len(unary.Choices[0].TokenIDs))
	}
	for _, bad := range []map[string]any{{"token_ids": []int{}, "sampling_params": map[string]any{}}, {"token_ids": p}, {"token_ids": p, "sampling_params": map[string]any{"max_tokens": 0}}} {
		if resp, body := post(t, s, "/inference/v1/generate", bad); resp.StatusCode != 400 {
			t.Errorf("%v: %d %s, want 400", bad, resp.StatusCode, body)
		}
	}
}

// structured_outputs reaches the engine as the request's guided decoding
// (the engine's script answers it); two kinds at once are refused.
func TestStructuredOutputs(t *testing.T) {
	var seen []string
	answer := []uint32{7, 8, 9}
	s := testServer(t, func(mc *mocker.Config, _ *Config) {
		mc.Script = func(req *backend.Request, _ int) ([]uint32, bool) {
			g := string(req.SamplingOptions.GuidedDecoding)
			seen = append(seen, g)
			return answer, g != ""
		}
	})
	for _, path := range []string{"/v1/completions", "/inference/v1/generate"} {
		body := map[string]any{"prompt": prompt(4), "max_tokens": 10, "return_token_ids": true, "structured_outputs": map[string]any{"json": map[string]any{"type": "object"}}}
		if path != "/v1/completions" {
			body = map[string]any{"token_ids": prompt(4), "sampling_params": map[string]any{"max_tokens": 10, "structured_outputs": map[string]any{"json": map[string]any{"type": "object"}}}}
		}
		resp, out := post(t, s, path, body)
		if resp.StatusCode != 200 || !strings.Contains(string(out), `"token_ids":[7,8,9]`) {
			t.Errorf("%s: %d %s; want the script's answer", path, resp.StatusCode, out)
		}
	}
	if len(seen) != 2 || seen[0] != `{"json":{"type":"object"}}` || seen[1] != seen[0] {
		t.Errorf("guided decoding the engine saw: %q", seen)
	}
	resp, out := post(t, s, "/v1/completions", map[string]any{"prompt": prompt(4), "structured_outputs": map[string]any{"json_object": true}})
	if resp.StatusCode != 200 || seen[len(seen)-1] != `{"json":{"type":"object"}}` {
		t.Errorf("json_object: %d %s, engine saw %q", resp.StatusCode, out, seen[len(seen)-1])
	}
	resp, out = post(t, s, "/v1/completions", map[string]any{"prompt": prompt(4), "structured_outputs": map[string]any{"regex": "a", "choice": []string{"b"}}})
	if resp.StatusCode != 400 || !strings.Contains(string(out), "one kind") {
		t.Errorf("two kinds: %d %s, want 400", resp.StatusCode, out)
	}
}

// Stop strings cut the text as vLLM's do: the text before the stop
// string (with it under include_stop_str_in_output), finish stop with
// the string as stop_reason, the engine's request stopped; streamed and
// unary alike.
func TestStopStrings(t *testing.T) {
	// Token id i decodes to the letter 'a' + i%26.
	s := testServer(t, func(mc *mocker.Config, c *Config) {
		mc.Script = func(*backend.Request, int) ([]uint32, bool) {
			return []uint32{7, 4, 11, 11, 14, 22, 14, 17, 11, 3}, true
		} // "helloworld"
		c.Detokenize = func(ids []uint32, _ bool) (string, error) {
			b := make([]byte, len(ids))
			for i, id := range ids {
				b[i] = byte('a' + id%26)
			}
			return string(b), nil
		}
	})
	for _, c := range []struct {
		include bool
		want    string
	}{{false, "hell"}, {true, "hellowo"}} {
		req := map[string]any{"prompt": prompt(3), "max_tokens": 10, "stop": []string{"owo", "zz"}, "include_stop_str_in_output": c.include}
		resp, body := post(t, s, "/v1/completions", req)
		var unary struct {
			Choices []choiceJSON `json:"choices"`
			Usage   usageInfo    `json:"usage"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &unary) != nil {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		ch := unary.Choices[0]
		if *ch.Text != c.want || *ch.FinishReason != "stop" || string(ch.StopReason) != `"owo"` || unary.Usage.CompletionTokens != 7 {
			t.Errorf("include %v: text %q finish %s stop_reason %s, %d tokens; want %q, stop, \"owo\", 7", c.include, *ch.Text, *ch.FinishReason, ch.StopReason, unary.Usage.CompletionTokens, c.want)
		}
		req["stream"], req["stream_options"] = true, map[string]any{"include_usage": true}
		_, body = post(t, s, "/v1/completions", req)
		var text strings.Builder
		var finish, stop string
		for _, ev := range events(t, body) {
			var k chunk
			if json.Unmarshal([]byte(ev), &k) != nil || len(k.Choices) == 0 {
				continue
			}
			var ch choiceJSON
			_ = json.Unmarshal(k.Choices[0], &ch)
			text.WriteString(*ch.Text)
			if ch.FinishReason != nil {
				finish, stop = *ch.FinishReason, string(ch.StopReason)
			}
		}
		if text.String() != c.want || finish != "stop" || stop != `"owo"` {
			t.Errorf("streamed, include %v: %q %s %s", c.include, text.String(), finish, stop)
		}
	}
	// Without a stop string in the text, the held-back prefix ("o" could
	// start "owo") is released at the end.
	_, body := post(t, s, "/v1/completions", map[string]any{"prompt": prompt(3), "max_tokens": 5, "stop": []string{"owx"}, "stream": true})
	var text strings.Builder
	for _, ev := range events(t, body) {
		var k chunk
		if json.Unmarshal([]byte(ev), &k) == nil && len(k.Choices) > 0 {
			var ch choiceJSON
			_ = json.Unmarshal(k.Choices[0], &ch)
			text.WriteString(*ch.Text)
		}
	}
	if text.String() != "hello" {
		t.Errorf("no stop: %q, want hello", text.String())
	}
}
