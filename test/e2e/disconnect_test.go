package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// TestClientDisconnect checks that a client that goes away mid-stream
// stops the worker's generation, not just the HTTP response.
//
// The worker runs at real speed (a 2000-token answer takes over ten
// seconds) with room for one sequence only (--max-num-seqs 1): while the
// abandoned answer kept generating, no other request could be served.
func TestClientDisconnect(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	mocker := c.startMocker("mocker", []string{"--speedup-ratio", "1", "--max-num-seqs", "1"}, "DYN_LOG=debug")
	// Every stream takes its connection over from net/http (the
	// frontend's tests cover both ways): the watcher of the connection
	// must tell the client left.
	f := c.startFrontend("DYN_HTTP_DETACH_STREAMS_AT=1")
	f.waitModels(t, "demo")

	cancelled := 0
	for _, tc := range []struct {
		name string
		// abandon starts a 2000-token stream, reads its first chunks and
		// goes away.
		abandon func(t *testing.T)
	}{
		{"net/http closes the body", func(t *testing.T) {
			req := userChat("demo", "Write a very long essay.", 2000)
			req["stream"] = true
			b, _ := json.Marshal(req)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			hr, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/chat/completions", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Content-Type", "application/json")
			resp, err := f.http.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				f.fatalf(t, "status %d", resp.StatusCode)
			}
			rd := bufio.NewReader(resp.Body)
			for chunks := 0; chunks < 3; {
				line, err := rd.ReadString('\n')
				if err != nil {
					f.fatalf(t, "after %d chunks: %v", chunks, err)
				}
				if strings.HasPrefix(line, "data: ") {
					chunks++
				}
			}
			resp.Body.Close()
		}},
		{"openai-go cancels its context", func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			stream := f.sdk.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:     "demo",
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Write a very long essay.")},
				MaxTokens: openai.Int(2000),
			})
			defer stream.Close()
			for chunks := 0; chunks < 3; chunks++ {
				if !stream.Next() {
					f.fatalf(t, "after %d chunks: %v", chunks, stream.Err())
				}
			}
			cancel()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.abandon(t)
			gone := time.Now()
			cancelled++

			// The frontend counts the request as cancelled and has
			// nothing in flight.
			var m metrics
			f.waitFor(t, 10*time.Second, "the frontend to count the request as cancelled", func() bool {
				m = f.scrape(t)
				n, _ := m.value("dynamo_frontend_requests_total", `endpoint="chat_completions"`, `request_type="stream"`, `status="error"`, `error_type="cancelled"`)
				inflight, _ := m.value("dynamo_frontend_inflight_requests", `model="demo"`)
				return n == float64(cancelled) && inflight == 0
			})
			// The worker's handler ends: nothing in flight there either.
			mocker.waitFor(t, 10*time.Second, "the worker to end the abandoned request", func() bool {
				n, ok := mocker.scrape(t).value("dynamo_component_inflight_requests", generateEndpoint)
				return ok && n == 0
			})
			// And its only sequence slot is free: a short request is
			// answered now, not after the abandoned answer's remaining
			// ten seconds.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			c, err := f.sdk.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:     "demo",
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
				MaxTokens: openai.Int(3),
			})
			if err != nil {
				fatalf(t, []*process{f.process, mocker}, "a short request after the disconnect: %v (the worker is still busy with the abandoned answer?)", err)
			}
			if c.Choices[0].FinishReason != "length" || c.Usage.CompletionTokens != 3 {
				t.Errorf("short request after the disconnect: %+v", c)
			}
			t.Logf("worker free and answering %s after the client left", time.Since(gone).Round(time.Millisecond))
		})
	}
}
