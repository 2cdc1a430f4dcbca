package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// seedBodies are valid requests the mutations start from.
var seedBodies = []struct{ path, body string }{
	{"/v1/chat/completions", `{"model":"demo","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4,"temperature":0.5,"stop":["x"],"logprobs":true,"top_logprobs":2}`},
	{"/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"weather?"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"auto"}`},
	{"/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}],"max_tokens":3,"n":2,"seed":7,"response_format":{"type":"json_object"},"nvext":{"annotations":["request_id"]}}`},
	{"/v1/completions", `{"model":"demo","prompt":["one","two"],"max_tokens":3,"logprobs":2,"echo":false,"n":1}`},
	{"/v1/completions", `{"model":"demo","prompt":[[1,2,3],[4,5]],"max_tokens":2,"stream":true,"min_tokens":1,"ignore_eos":true}`},
	{"/v1/responses", `{"model":"demo","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"max_output_tokens":4,"stream":true}`},
	{"/v1/embeddings", `{"model":"emb","input":["one","two"],"encoding_format":"base64","dimensions":2}`},
	{"/v1/embeddings", `{"model":"emb","input":[[1,2,3],[4]]}`},
}

// TestMalformedBodiesGetClearAnswers throws thousands of mutated and
// malformed bodies (chat, completions, Responses, embeddings) at served
// models: wrong types, truncated JSON,
// random bytes, odd content types. Every answer must come within the
// deadline and be a 2xx whose body (SSE streams included) carries no
// error event or error object, or a 4xx with the nested OpenAI error
// body; nothing may be a 5xx, and the service must still answer a valid
// request afterwards.
func TestMalformedBodiesGetClearAnswers(t *testing.T) {
	s := newStack(t, Config{BodyLimit: 256 << 10}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	s.addEmbeddingWorker(t, "emb")
	n := 3000
	if testing.Short() {
		n = 300
	}
	rng := rand.New(rand.NewPCG(18, 2026))
	client := &http.Client{Timeout: 20 * time.Second}
	statuses := map[int]int{}
	streamed := 0 // 200s that were SSE streams
	for i := 0; i < n; i++ {
		seed := seedBodies[rng.IntN(len(seedBodies))]
		body, ctype := mutate(rng, seed.body)
		status, resp, err := postRaw(client, s.url+seed.path, ctype, body)
		if err != nil {
			t.Fatalf("request %d (%s, %s) %q: %v", i, seed.path, ctype, clip(body), err)
		}
		statuses[status]++
		switch {
		case status >= 200 && status < 300:
			// A 200 is a whole answer: no stream that broke after it began.
			if bytes.HasPrefix(resp, []byte("data: ")) || bytes.HasPrefix(resp, []byte("event: ")) {
				streamed++
			}
			for _, bad := range []string{"event: error", "event: response.failed", `{"error":`} {
				if strings.Contains(string(resp), bad) {
					t.Fatalf("request %d (%s) %q: %d with %q in its body %s", i, seed.path, clip(body), status, bad, clip(resp))
				}
			}
			continue
		case status >= 400 && status < 500:
			var e openai.ErrorBody
			if err := json.Unmarshal(resp, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("request %d %q: %d with body %s, want the nested error body", i, clip(body), status, clip(resp))
			}
		default:
			t.Fatalf("request %d (%s, %s) %q: status %d %s", i, seed.path, ctype, clip(body), status, clip(resp))
		}
	}
	t.Logf("%d bodies, answers by status: %v (%d streamed)", n, statuses, streamed)
	if statuses[200] == 0 || statuses[400] == 0 || streamed == 0 {
		t.Errorf("statuses %v (%d streamed): the mutations should give both successes, streams among them, and 400s", statuses, streamed)
	}
	if r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"still there?"}],"max_tokens":2}`); r.status != 200 {
		t.Errorf("after the malformed bodies: %d %s", r.status, r.body)
	}
}

func postRaw(c *http.Client, url, ctype string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// mutate returns a malformed or odd variant of a valid body, and the
// content type to send it with.
func mutate(rng *rand.Rand, body string) ([]byte, string) {
	ctype := "application/json"
	switch rng.IntN(12) {
	case 0:
		ctype = []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1"}[rng.IntN(5)]
	case 1:
		return []byte(body[:rng.IntN(len(body))]), ctype // truncated
	case 2:
		b := make([]byte, rng.IntN(200))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b, ctype // random bytes
	case 3:
		b := []byte(body)
		for k := rng.IntN(4) + 1; k > 0; k-- {
			b[rng.IntN(len(b))] = byte(rng.UintN(256)) // flipped bytes
		}
		return b, ctype
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		panic(err)
	}
	for k := rng.IntN(3) + 1; k > 0; k-- {
		v = mutateValue(rng, v, 0)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b, ctype
}

// mutateValue replaces, deletes or adds one member somewhere in v.
func mutateValue(rng *rand.Rand, v any, depth int) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		if len(keys) == 0 || rng.IntN(6) == 0 {
			x[[]string{"bogus", "n", "tools", "tool_choice", "functions", "function_call", "nvext", "logit_bias", "stop", "messages", "prompt"}[rng.IntN(11)]] = randomValue(rng, depth)
			return x
		}
		slices.Sort(keys) // map order would make the run irreproducible
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(4) {
		case 0:
			delete(x, k)
		case 1:
			x[k] = randomValue(rng, depth)
		default:
			x[k] = mutateValue(rng, x[k], depth+1)
		}
		return x
	case []any:
		if len(x) == 0 || rng.IntN(5) == 0 {
			return append(x, randomValue(rng, depth))
		}
		i := rng.IntN(len(x))
		x[i] = mutateValue(rng, x[i], depth+1)
		return x
	}
	return randomValue(rng, depth)
}

// randomValue is a JSON value of a random type, including edge values.
func randomValue(rng *rand.Rand, depth int) any {
	choices := []func() any{
		func() any { return nil },
		func() any { return rng.IntN(2) == 0 },
		func() any { return []float64{0, -1, 1e300, -1e-300, 2.5, 129, 1 << 53, -(1 << 31)}[rng.IntN(8)] },
		func() any {
			return []string{"", "none", "required", "auto", "\u0000", strings.Repeat("x", 5000), "<tool_call>", "demo", "user", "\xff"}[rng.IntN(10)]
		},
		func() any {
			if depth > 4 {
				return "deep"
			}
			return []any{randomValue(rng, depth+1), randomValue(rng, depth+1)}
		},
		func() any {
			if depth > 4 {
				return 1
			}
			return map[string]any{"type": "function", "name": randomValue(rng, depth+1), fmt.Sprint("k", rng.IntN(3)): randomValue(rng, depth+1)}
		},
	}
	return choices[rng.IntN(len(choices))]()
}
