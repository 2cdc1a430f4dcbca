package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestBadRequests sends a table of bad requests, each of which must get
// its status and a clear flat error, while a client streams good chats
// the whole time: bad requests must not disturb good ones.
func TestBadRequests(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	c.startMocker("mocker", deterministic)
	f := c.startFrontend("DYN_HTTP_BODY_LIMIT_MB=1")
	f.waitModels(t, "demo")

	// The good traffic: streamed chats in a loop until the table is done.
	ctx, stopGood := context.WithCancel(t.Context())
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		good      int
		goodFails []error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			err := streamChat(ctx, f)
			if ctx.Err() != nil {
				return // cut short by stopGood: neither success nor failure
			}
			mu.Lock()
			if err != nil {
				goodFails = append(goodFails, err)
			} else {
				good++
			}
			mu.Unlock()
		}
	}()

	chatTo := func(model string, extra object) object {
		r := userChat(model, "Hello", 8)
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	chat := func(extra object) object { return chatTo("demo", extra) }
	words := strings.Repeat("word ", 20000)
	for _, tc := range []struct {
		name   string
		path   string
		body   any // an object, or raw bytes
		status int
		phrase string // a key phrase of the message
	}{
		{"malformed JSON", "/v1/chat/completions", []byte(`{"model": "demo", "messages": [`), 400, "invalid JSON"},
		{"temperature of the wrong type", "/v1/chat/completions", chat(object{"temperature": "hot"}), 400, "temperature"},
		{"no messages", "/v1/chat/completions", object{"model": "demo", "messages": []object{}}, 400, "messages must not be empty"},
		{"unknown model", "/v1/chat/completions", userChat("no-such-model", "Hello", 8), 404, "no-such-model"},
		{"unknown model, streaming", "/v1/chat/completions", chatTo("no-such-model", object{"stream": true}), 404, "no-such-model"},
		{"negative max_tokens", "/v1/chat/completions", chat(object{"max_tokens": -1}), 400, "max_tokens"},
		{"temperature out of range", "/v1/chat/completions", chat(object{"temperature": 5}), 400, "temperature must be between 0 and 2"},
		{"temperature out of range, streaming", "/v1/chat/completions", chat(object{"temperature": 5, "stream": true}), 400, "temperature"},
		{"stream_options without stream", "/v1/chat/completions", chat(object{"stream_options": object{"include_usage": true}}), 400, "stream_options"},
		{"body over the limit", "/v1/chat/completions", userChat("demo", strings.Repeat("a", 2<<20), 8), 413, "too large"},
		{"prompt over the context length", "/v1/chat/completions", userChat("demo", words, 8), 400, "maximum context length"},
		{"completion prompt over the context length", "/v1/completions", object{"model": "demo", "prompt": words}, 400, "maximum context length"},
		{"invalid UTF-8", "/v1/chat/completions", []byte("{\"model\":\"demo\",\"messages\":[{\"role\":\"user\",\"content\":\"hi \xff\xfe\"}]}"), 400, "UTF-8"},
		{"unknown field", "/v1/chat/completions", chat(object{"frobnicate": true}), 400, "Unsupported parameter"},
		{"unknown field, completions", "/v1/completions", object{"model": "demo", "prompt": "x", "frobnicate": true}, 400, "Unsupported parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.post(t, tc.path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no x-request-id header")
			}
			if e := decodeError(t, resp.StatusCode, body); !strings.Contains(e.Message, tc.phrase) {
				t.Errorf("message %q does not say %q", e.Message, tc.phrase)
			}
		})
	}

	stopGood()
	wg.Wait()
	if len(goodFails) > 0 || good == 0 {
		t.Errorf("good streams during the table: %d succeeded, %d failed: %v", good, len(goodFails), goodFails)
	}
	t.Logf("%d good streams completed during the table", good)
}

// streamChat streams one chat and checks it as a client would: 200, text,
// finish_reason length, and [DONE] at the end. It is safe to call from
// any goroutine.
func streamChat(ctx context.Context, f *frontend) error {
	req := userChat("demo", "Tell me a story.", 32)
	req["stream"] = true
	b, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/chat/completions", bytes.NewReader(b))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := f.http.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	var text, finish, last string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			if strings.HasPrefix(sc.Text(), "event:") {
				return fmt.Errorf("stream error event: %s", sc.Text())
			}
			continue
		}
		last = data
		if data == "[DONE]" {
			continue
		}
		var chunk response
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return fmt.Errorf("chunk %q: %w", data, err)
		}
		for _, ch := range chunk.Choices {
			text += ch.Delta.Content
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if last != "[DONE]" || text == "" || finish != "length" {
		return fmt.Errorf("stream ended with %q, text %q, finish_reason %q", last, text, finish)
	}
	return nil
}
