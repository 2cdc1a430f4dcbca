package loadgen

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// streamStart writes the headers of an SSE response and n content chunks.
func streamStart(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	tok := " tok"
	for range n {
		_ = openai.WriteSSE(w, "", openai.ChatCompletionChunk{Choices: []openai.ChatChunkChoice{{Delta: openai.ChatDelta{Content: &tok}}}})
	}
	_ = http.NewResponseController(w).Flush()
}

func TestRunCountsErrorsByKind(t *testing.T) {
	baseline := BaselineHandler(BaselineOptions{})
	var count atomic.Int64
	tests := []struct {
		name    string
		handler http.HandlerFunc
		kind    ErrorKind
		failed  int // of 30 requests
	}{
		{
			name: "http 400 for every third request",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if count.Add(1)%3 == 0 {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"error":{"message":"bad prompt","type":"Bad Request","code":400}}`)
					return
				}
				baseline.ServeHTTP(w, r)
			},
			kind: KindHTTP, failed: 10,
		},
		{
			name: "error event mid-stream",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				streamStart(w, 3)
				_ = openai.WriteSSEError(w, openai.NewErrorBody(http.StatusInternalServerError, "engine died", ""))
			},
			kind: KindSSE, failed: 30,
		},
		{
			name: "error object in a data frame",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				streamStart(w, 1)
				fmt.Fprint(w, "data: {\"error\":{\"message\":\"overloaded\"}}\n\n")
			},
			kind: KindSSE, failed: 30,
		},
		{
			name: "connection closed mid-stream",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				streamStart(w, 3)
				panic(http.ErrAbortHandler) // closes the connection without ending the body
			},
			kind: KindTransport, failed: 30,
		},
		{
			name: "stream ends without [DONE]",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				streamStart(w, 3)
			},
			kind: KindProtocol, failed: 30,
		},
		{
			name: "malformed chunk",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				streamStart(w, 1)
				fmt.Fprint(w, "data: {not json\n\n")
			},
			kind: KindProtocol, failed: 30,
		},
		{
			name: "server stalls past the timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamStart(w, 1)
				<-r.Context().Done()
			},
			kind: KindTimeout, failed: 30,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			count.Store(0)
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			cfg := testConfig(srv.URL)
			cfg.Requests = 30
			cfg.Warmup = 0
			cfg.Concurrency = 10
			cfg.Timeout = 150 * time.Millisecond
			if tt.kind != KindTimeout {
				cfg.Timeout = 5 * time.Second
			}
			rep := runFor(t, cfg)
			if rep.Failed != tt.failed || rep.Errors[tt.kind] != tt.failed || len(rep.Errors) != 1 {
				t.Fatalf("failed %d, errors %v (%v); want %d under %s", rep.Failed, rep.Errors, rep.ErrorSamples, tt.failed, tt.kind)
			}
			if rep.Completed != cfg.Requests-tt.failed || rep.Cancelled != 0 {
				t.Errorf("completed %d, cancelled %d; want %d completed", rep.Completed, rep.Cancelled, cfg.Requests-tt.failed)
			}
			if len(rep.ErrorSamples) == 0 {
				t.Error("no error sample kept")
			}
			if tt.kind == KindHTTP && rep.HTTPStatus["400"] != tt.failed {
				t.Errorf("http status counts %v, want 400×%d", rep.HTTPStatus, tt.failed)
			}
			if rep.TTFT.Count != rep.Completed {
				t.Errorf("TTFT samples %d, want one per completed request (%d)", rep.TTFT.Count, rep.Completed)
			}
		})
	}
}

func TestRunCountsRefusedConnections(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	cfg := testConfig(url)
	cfg.Warmup = 0
	cfg.Requests = 5
	rep := runFor(t, cfg)
	if rep.Errors[KindTransport] != 5 {
		t.Fatalf("errors %v, want transport×5", rep.Errors)
	}
}

func TestRunIgnoresNamedEventsAndCountsWithoutUsage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = openai.WriteSSE(w, "formatted_prompt", map[string]string{"prompt": "<s>hi"})
		role, tok := "", " tok"
		_ = openai.WriteSSE(w, "", openai.ChatCompletionChunk{Choices: []openai.ChatChunkChoice{{Delta: openai.ChatDelta{Role: "assistant", Content: &role}}}})
		for range 5 {
			_ = openai.WriteSSE(w, "", openai.ChatCompletionChunk{Choices: []openai.ChatChunkChoice{{Delta: openai.ChatDelta{Content: &tok}}}})
		}
		fmt.Fprint(w, openai.SSEDone)
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	rep := runFor(t, cfg)
	n := cfg.Requests
	if rep.Completed != n || rep.UsageMissing != n || rep.OutputTokens != int64(5*n) || rep.InputTokens != int64(n*cfg.ISL) {
		t.Fatalf("completed %d, usage missing %d, output %d, input %d; want %d, %d, %d, %d",
			rep.Completed, rep.UsageMissing, rep.OutputTokens, rep.InputTokens, n, n, 5*n, n*cfg.ISL)
	}
	if rep.ITL.Count != n*4 {
		t.Errorf("ITL samples %d, want %d", rep.ITL.Count, n*4)
	}
}
