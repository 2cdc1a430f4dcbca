package frontend

import (
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// A handler that panics before writing is answered 500 with the OpenAI
// error body, the panic is logged once with its stack, and the service
// goes on serving.
func TestHandlerPanicIsA500AndTheServiceGoesOn(t *testing.T) {
	var logs testenv.Buffer
	models := &fakeModels{}
	url := serveModels(t, Config{}, slog.New(slog.NewTextHandler(&logs, nil)), models)

	models.boom.Store(true)
	r := request(t, http.MethodGet, url+"/v1/models", "", nil)
	if r.status != http.StatusInternalServerError || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v %s, want a JSON 500", r.status, r.header, r.body)
	}
	if e := errorInfo(t, r.body); e.Message != "Internal server error" || e.Type != "server_error" || e.Param != nil {
		t.Errorf("500 body %s", r.body)
	}
	out := logs.String()
	if strings.Count(out, "handler panic") != 1 || !strings.Contains(out, "boom: a bug in a handler") || !strings.Contains(out, "fakeModels") {
		t.Errorf("want one log line with the panic and its stack:\n%s", out)
	}
	models.boom.Store(false)
	if r := request(t, http.MethodGet, url+"/v1/models", "", nil); r.status != http.StatusOK {
		t.Errorf("after the panic: /v1/models %d %s", r.status, r.body)
	}
	if r := request(t, http.MethodGet, url+"/health", "", nil); r.status != http.StatusOK {
		t.Errorf("after the panic: /health %d %s", r.status, r.body)
	}
}

// A handler that panics in the middle of a stream has its connection cut
// (the client reads a truncated body, not a hang), the panic is logged
// once, by us, and net/http logs nothing; a handler's own
// http.ErrAbortHandler is left alone.
func TestHandlerPanicMidStreamCutsTheConnection(t *testing.T) {
	var logs, serverLog testenv.Buffer
	mw := recoverPanics(slog.New(slog.NewTextHandler(&logs, nil)))
	srv := httptest.NewUnstartedServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"first\":1}\n\n")
		_ = http.NewResponseController(w).Flush()
		if r.URL.Path == "/abort" {
			panic(http.ErrAbortHandler)
		}
		panic("boom mid-stream")
	})))
	srv.Config.ErrorLog = log.New(&serverLog, "", 0)
	srv.Start()
	defer srv.Close()
	for _, path := range []string{"/panic", "/abort"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err == nil || !strings.Contains(string(body), `"first":1`) {
			t.Errorf("%s: status %d, body %q, read error %v: want the first event, then a cut connection", path, resp.StatusCode, body, err)
		}
	}
	if out := logs.String(); strings.Count(out, "handler panic") != 1 || !strings.Contains(out, "boom mid-stream") {
		t.Errorf("want one log line for the panic (none for the abort):\n%s", out)
	}
	if out := serverLog.String(); out != "" {
		t.Errorf("net/http logged:\n%s", out)
	}
}
