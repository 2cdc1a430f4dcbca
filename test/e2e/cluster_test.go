package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// cluster is one deployment: a discovery back-end and a request plane
// that every process started from it shares.
type cluster struct {
	t    testing.TB
	args []string // --discovery-backend and --request-plane
	env  []string // where etcd, NATS or the discovery directory are
}

// newCluster starts what the configuration needs: an in-process etcd for
// etcd discovery, a temporary directory for file discovery, an in-process
// NATS for the NATS request plane.
func newCluster(t testing.TB, discovery, plane string) *cluster {
	t.Helper()
	c := &cluster{t: t, args: []string{"--discovery-backend", discovery, "--request-plane", plane}, env: []string{
		// Advertise loopback addresses, not the machine's first interface.
		"DYN_TCP_RPC_HOST=127.0.0.1",
		"DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1",
		// Stop quickly in the cleanups.
		"DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0",
		"DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0",
	}}
	switch discovery {
	case "etcd":
		c.env = append(c.env, "ETCD_ENDPOINTS="+testenv.StartEtcd(t).URL)
	case "file":
		c.env = append(c.env, "DYN_FILE_KV="+t.TempDir())
	default:
		t.Fatalf("unknown discovery back-end %q", discovery)
	}
	if plane == "nats" {
		c.env = append(c.env, "NATS_SERVER="+testenv.StartNATS(t).URL)
	}
	return c
}

// startFrontend starts a frontend on a free port. env adds or overrides
// environment variables.
func (c *cluster) startFrontend(env ...string) *frontend {
	c.t.Helper()
	return c.startFrontendArgs(nil, env...)
}

// startFrontendArgs is startFrontend with extra command-line flags.
func (c *cluster) startFrontendArgs(extra []string, env ...string) *frontend {
	c.t.Helper()
	port := testenv.FreePort(c.t)
	args := append(append([]string{"--http-host", "127.0.0.1", "--http-port", fmt.Sprint(port)}, c.args...), extra...)
	p := startProcess(c.t, "frontend", frontendBin, append(slices.Clone(c.env), env...), args...)
	return newFrontend(c.t, p, fmt.Sprintf("http://127.0.0.1:%d", port))
}

// startMocker starts a mocker process serving the demo model. Tests pass
// the flags they care about; env adds environment variables.
func (c *cluster) startMocker(name string, args []string, env ...string) *process {
	c.t.Helper()
	args = append(append([]string{"--model-path", demoModel}, c.args...), args...)
	return startProcess(c.t, name, mockerBin, append(slices.Clone(c.env), env...), args...)
}

// process is a product binary running as a child of the test.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // how it exited; set before done is closed

	killed bool // the test killed it on purpose
}

// startProcess starts bin with a clean environment: the test machine's
// DYN_*, ETCD_* and NATS_* variables are dropped so that only env counts.
// The process is stopped (SIGTERM, then SIGKILL) when the test ends, and
// its log is printed if the test failed.
func startProcess(t testing.TB, name, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), log: &syncBuffer{}, done: make(chan struct{})}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DYN_") && !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "NATS_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout = p.log
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.exited() && !p.killed {
			t.Errorf("%s exited during the test: %v", name, p.err)
		}
		if !p.stop(5 * time.Second) {
			t.Logf("%s did not exit within 5s of SIGTERM; killed", name)
		}
		if t.Failed() {
			t.Logf("---- %s (%s) log ----\n%s", name, strings.Join(args, " "), p.log.String())
		}
	})
	return p
}

// stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it. It reports whether the process exited by itself.
func (p *process) stop(grace time.Duration) bool {
	if p.exited() {
		return true
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

// kill sends SIGKILL, as a crash would, and waits for the exit.
func (p *process) kill() {
	p.killed = true
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// frontend is a running frontend and the two clients the tests use.
type frontend struct {
	*process
	url  string        // e.g. http://127.0.0.1:8000
	http *http.Client  // plain net/http
	sdk  openai.Client // the official SDK, on the same transport
}

func newFrontend(t testing.TB, p *process, url string) *frontend {
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	hc := &http.Client{Transport: transport, Timeout: 60 * time.Second}
	return &frontend{
		process: p,
		url:     url,
		http:    hc,
		sdk: openai.NewClient(
			option.WithBaseURL(url+"/v1"),
			option.WithAPIKey("x"),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0), // a retry would hide a failure
		),
	}
}

// waitModels waits until GET /v1/models lists exactly the given models
// and each of them answers.
func (f *frontend) waitModels(t testing.TB, ids ...string) {
	t.Helper()
	want := slices.Sorted(slices.Values(ids))
	var got []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if f.exited() {
			t.Fatalf("frontend exited while waiting for models %v", want)
		}
		if got = f.modelIDs(t); slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s /v1/models lists %v, want %v", got, want)
		}
	}
	// Known race in the product: a worker publishes its model card a
	// moment before its endpoint instance (pkg/backend/worker.go), and the
	// frontend lists the model as soon as the card arrives, so a request
	// in between gets 503 "No worker is available". Wait until each model
	// answers; the log says when the race was hit.
	for _, id := range want {
		refused := 0
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, body := f.post(t, "/v1/chat/completions", userChat(id, "ping", 1))
			if resp.StatusCode == http.StatusOK {
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("model %s is listed but does not answer: %d %s", id, resp.StatusCode, body)
			}
			refused++
		}
		if refused > 0 {
			t.Logf("model %s was listed but refused %d requests with 503 before it answered", id, refused)
		}
	}
}

// modelIDs returns the sorted ids GET /v1/models lists, nil on an error.
func (f *frontend) modelIDs(t testing.TB) []string {
	resp, err := f.http.Get(f.url + "/v1/models")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return nil
	}
	if list.Object != "list" {
		t.Errorf("GET /v1/models: object %q, want list", list.Object)
	}
	ids := []string{}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// deterministic are the mocker flags for repeatable answers at test speed.
var deterministic = []string{"--deterministic", "--speedup-ratio", "200"}
