package bridge_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
)

type connKey struct{}

// closingServer is a llama-server stand-in (/health, /props, /v1/models,
// /tokenize) that answers one request per connection and closes a
// kept-alive connection when a second request arrives on it, unanswered,
// as an engine that closed it while idle looks to its client.
func closingServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	served := map[net.Conn]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(connKey{}).(net.Conn)
		mu.Lock()
		served[c]++
		n := served[c]
		mu.Unlock()
		if n > 1 {
			hj, _ := w.(http.Hijacker)
			conn, _, err := hj.Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/health":
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case "/props":
			_, _ = w.Write([]byte(`{"model_path":"m.gguf","default_generation_settings":{"n_ctx":512}}`))
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"m.gguf","meta":{"n_vocab":100}}]}`))
		case "/tokenize":
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": []int{1, 2, 3}})
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// An engine that closes idle keep-alive connections (llama-server does
// after 5 s) costs no request: one that meets a closed connection is sent
// again on a new one, never on the next pooled connection, which may be as
// stale (with several idle connections in the pool, every request here
// would meet one).
func TestRequestsOnConnectionsTheEngineClosed(t *testing.T) {
	srv := closingServer(t)
	e, err := bridge.New(bridge.Config{Dialect: bridge.DialectLlamaCpp, URL: srv.URL, StartTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Cleanup(context.Background()) })
	if _, err := e.Start(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	text := "hello"
	// Several connections in the pool at once, then each request meets
	// a closed one.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := e.TokenizeChat(t.Context(), &backend.TokenizeRequest{Prompt: &text})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent tokenize: %v", err)
		}
	}
	for i := range 20 {
		if _, err := e.TokenizeChat(t.Context(), &backend.TokenizeRequest{Prompt: &text}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
}
