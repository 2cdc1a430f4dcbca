package testenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NodeLlamaCppVersion is the version of the npm package node-llama-cpp
// whose llama.cpp source scripts/llama-server.sh builds; the build's
// cache directory is keyed by it.
const NodeLlamaCppVersion = "3.21.1"

// LlamaServerHint is the line a test that needs llama-server skips with.
const LlamaServerHint = "llama-server not built: run `make llama-server` (scripts/llama-server.sh builds it from the npm package node-llama-cpp), or set LLAMA_SERVER to a llama-server binary"

// LlamaServerPath returns the llama-server binary tests run: $LLAMA_SERVER,
// else the one scripts/llama-server.sh built into its cache, else
// llama-server on PATH; "" when there is none.
func LlamaServerPath() string {
	if p := os.Getenv("LLAMA_SERVER"); p != "" {
		return p
	}
	cache := os.Getenv("DYN_LLAMA_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "dynamo-go", "llama.cpp")
	}
	p := filepath.Join(cache, "node-llama-cpp-"+NodeLlamaCppVersion, "bin", "llama-server")
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p
	}
	if p, err := exec.LookPath("llama-server"); err == nil {
		return p
	}
	return ""
}

// NeedLlamaServer returns the llama-server binary, or skips t with
// LlamaServerHint; with DYN_REQUIRE_LLAMA_SERVER=1 (CI, which builds it)
// it fails t instead.
func NeedLlamaServer(t testing.TB) string {
	t.Helper()
	p := LlamaServerPath()
	if p == "" {
		if os.Getenv("DYN_REQUIRE_LLAMA_SERVER") == "1" {
			t.Fatal(LlamaServerHint + " (DYN_REQUIRE_LLAMA_SERVER=1: required here)")
		}
		t.Skip(LlamaServerHint)
	}
	return p
}

// LlamaOptions configure StartLlamaServer.
type LlamaOptions struct {
	// Model is the GGUF file to serve (-m).
	Model string
	// Args are further llama-server flags (e.g. "--parallel", "2").
	Args []string
	// Port is the port to bind; 0 lets the server pick one.
	Port int
	// ReadyTimeout bounds the wait for /health to answer ok (default 60 s).
	ReadyTimeout time.Duration
}

// LlamaServer is a llama-server process the test started. It is killed
// when the test ends, and its log is printed if the test failed.
type LlamaServer struct {
	t    testing.TB
	bin  string
	opts LlamaOptions

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	url  string
	log  *Buffer
}

// listening is the line llama-server logs once its HTTP socket is bound.
var listening = regexp.MustCompile(`listening on (http://[^\s]+)`)

// StartLlamaServer starts bin serving opts.Model on 127.0.0.1, reads the
// address it bound from its log and waits until /health answers ok (the
// model is loaded); it fails t if the server does not get there.
func StartLlamaServer(t testing.TB, bin string, opts LlamaOptions) *LlamaServer {
	t.Helper()
	s := NewLlamaServer(t, bin, opts)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// NewLlamaServer returns a llama-server for Start to start, killed when
// the test ends.
func NewLlamaServer(t testing.TB, bin string, opts LlamaOptions) *LlamaServer {
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	s := &LlamaServer{t: t, bin: bin, opts: opts, log: &Buffer{}}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("llama-server log (last lines):\n%s", s.log.Tail(40))
		}
	})
	return s
}

// Start starts the server (again, after Kill: on the port it had, so
// that clients reach it at the same URL) and waits until it is ready.
func (s *LlamaServer) Start() error {
	s.mu.Lock()
	port := s.opts.Port
	if s.url != "" {
		if m := regexp.MustCompile(`:(\d+)$`).FindStringSubmatch(s.url); m != nil {
			port, _ = strconv.Atoi(m[1])
		}
	}
	args := append([]string{"-m", s.opts.Model, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--no-webui"}, s.opts.Args...)
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("start llama-server: %w", err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(done)
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.log.Write([]byte(line + "\n"))
			if m := listening.FindStringSubmatch(line); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	timeout := time.NewTimer(s.opts.ReadyTimeout)
	defer timeout.Stop()
	select {
	case u := <-addr:
		s.mu.Lock()
		s.url = u
		s.mu.Unlock()
	case <-done:
		return fmt.Errorf("llama-server exited before listening:\n%s", s.log.Tail(30))
	case <-timeout.C:
		s.Kill()
		return fmt.Errorf("llama-server did not report its address within %s:\n%s", s.opts.ReadyTimeout, s.log.Tail(30))
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ReadyTimeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("llama-server exited while loading the model:\n%s", s.log.Tail(30))
		case <-ctx.Done():
			s.Kill()
			return fmt.Errorf("llama-server not ready within %s:\n%s", s.opts.ReadyTimeout, s.log.Tail(30))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL is the server's base URL, e.g. http://127.0.0.1:41234.
func (s *LlamaServer) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Kill sends SIGKILL and waits until the process is gone.
func (s *LlamaServer) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}
