package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dynamo-go/dynamo/internal/loadgen"
)

// keepAliveDropConn is closed, unread, when a request arrives on it after
// it answered one: a server whose keep-alive timeout ends as the client
// sends on the pooled connection.
type keepAliveDropConn struct {
	net.Conn
	answered atomic.Bool
}

func (c *keepAliveDropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.answered.Load() {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

type keepAliveDropListener struct{ net.Listener }

func (l keepAliveDropListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &keepAliveDropConn{Conn: c}, nil
}

// bench run retries the requests sent on connections the server had
// closed and reports them in the table and the JSON; none fails.
func TestRunReportsIdleConnRetries(t *testing.T) {
	srv := httptest.NewUnstartedServer(loadgen.BaselineHandler(loadgen.BaselineOptions{}))
	srv.Listener = keepAliveDropListener{srv.Listener}
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateIdle {
			c.(*keepAliveDropConn).answered.Store(true)
		}
	}
	srv.Start()
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--url", srv.URL, "--model", "x", "--requests", "20", "--warmup", "0",
		"--concurrency", "2", "--osl", "2", "--json", path}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fields struct {
		Completed int  `json:"completed"`
		Failed    int  `json:"failed"`
		Retried   *int `json:"retried_idle_conn"`
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	if fields.Completed != 20 || fields.Failed != 0 || fields.Retried == nil || *fields.Retried == 0 {
		t.Fatalf("JSON: completed %d, failed %d, retried_idle_conn %v; want 20 completed, 0 failed, retries counted:\n%s",
			fields.Completed, fields.Failed, fields.Retried, b)
	}
	if want := "0 failed"; !strings.Contains(stdout.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, stdout.String())
	}
	if want := "retried (idle conn closed) " + strconv.Itoa(*fields.Retried) + ")"; !strings.Contains(stdout.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, stdout.String())
	}
}
