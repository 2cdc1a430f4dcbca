package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// Lines the binaries log once a listener is bound, in slog's text or
// JSON format (DYN_LOGGING_JSONL); the first non-empty group is the
// address. Every child binds port 0 and the test reads the port it got
// from here: a port picked by the test and handed to the child could be
// taken by anything else on the machine in between.
var (
	// pkg/frontend: the HTTP listener (--http-port 0).
	frontendListening = regexp.MustCompile(`msg="frontend: listening" addr=(\S+)|"msg":"frontend: listening","addr":"([^"]+)"`)
	// pkg/runtime: the status server, /health and /metrics (DYN_SYSTEM_PORT=0).
	statusListening = regexp.MustCompile(`msg="runtime: status server listening" addr=(\S+)|"msg":"runtime: status server listening","addr":"([^"]+)"`)
)

const (
	// logTail is how many of a process's last log lines a failure shows.
	logTail = 40
	// addrTimeout bounds the wait for a process to report its address:
	// its start, with the race detector, on a busy machine.
	addrTimeout = 60 * time.Second
)

// process is a product binary running as a child of the test.
type process struct {
	name     string
	cmd      *exec.Cmd
	log      *testenv.Buffer
	done     chan struct{}  // closed when the process has exited
	err      error          // how it exited; set before done is closed
	http     *http.Client   // for requests to the process
	addrLine *regexp.Regexp // the log line reporting its address (nil: none)

	killed bool // the test killed it on purpose

	mu   sync.Mutex
	addr string // from addrLine, once read
}

// startProcess starts bin with a clean environment: the test machine's
// DYN_*, ETCD_* and NATS_* variables are dropped so that only env counts.
// addrLine, when not nil, is the log line with which the process reports
// the address it bound (see address). The process is stopped (SIGTERM,
// then SIGKILL) when the test ends, and its log is printed if the test
// failed.
func startProcess(t testing.TB, name, bin string, addrLine *regexp.Regexp, env []string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), log: &testenv.Buffer{}, done: make(chan struct{}), addrLine: addrLine}
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
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	p.http = &http.Client{Transport: transport, Timeout: 60 * time.Second}
	return p
}

// address returns the address the process reported having bound (its
// addrLine), waiting up to addrTimeout for the line.
func (p *process) address(t testing.TB) string {
	t.Helper()
	if p.addrLine == nil {
		t.Fatalf("%s reports no address", p.name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.addr == "" {
		m := p.waitLine(t, addrTimeout, "the address it listens on", p.addrLine)
		p.addr = m[1]
		for _, g := range m[2:] { // the JSON log's group
			if p.addr == "" {
				p.addr = g
			}
		}
	}
	return p.addr
}

// waitLine waits up to d for a line of the process's log to match re,
// and returns the first match with its groups.
func (p *process) waitLine(t testing.TB, d time.Duration, what string, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	p.waitFor(t, d, what, func() bool {
		m = re.FindStringSubmatch(p.log.String())
		return m != nil
	})
	return m
}

// waitFor polls cond every 20 ms until it holds. It fails the test with
// the last lines of the process's log if the process exits first or d
// passes.
func (p *process) waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitFor(t, d, what, cond, p)
}

// waitFor is process.waitFor for a condition on several processes: it
// fails when one of them exits, with the last log lines of each.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool, procs ...*process) {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		for _, p := range procs {
			if p.exited() {
				fatalf(t, procs, "%s exited (%v) while the test waited for %s", p.name, p.err, what)
			}
		}
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			fatalf(t, procs, "timed out after %s waiting for %s", d, what)
		}
	}
}

// fatalf fails the test now with the message and the last log lines of
// the process.
func (p *process) fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	fatalf(t, []*process{p}, format, args...)
}

// fatalf is process.fatalf with the log lines of several processes.
func fatalf(t testing.TB, procs []*process, format string, args ...any) {
	t.Helper()
	var b strings.Builder
	b.WriteString(fmt.Sprintf(format, args...))
	for _, p := range procs {
		b.WriteString(p.lastLines())
	}
	t.Fatal(b.String())
}

// lastLines is the end of the process's log, headed by its name and, if
// it has exited, how, for a failure message.
func (p *process) lastLines() string {
	state := "running"
	if p.exited() {
		state = fmt.Sprintf("exited: %v", p.err)
	}
	return fmt.Sprintf("\n---- %s (%s): last %d log lines ----\n%s", p.name, state, logTail, p.log.Tail(logTail))
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

// scrape fetches the process's /metrics, on the address it reported.
func (p *process) scrape(t testing.TB) metrics {
	t.Helper()
	url := "http://" + p.address(t) + "/metrics"
	resp, err := p.http.Get(url)
	if err != nil {
		p.fatalf(t, "GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		p.fatalf(t, "GET %s: status %d, err %v", url, resp.StatusCode, err)
	}
	return metrics(b)
}
