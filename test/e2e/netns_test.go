package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// Simulated machines. A test builds them on this machine with network
// namespaces: a "switch" namespace holding a Linux bridge, and one
// namespace per host, attached to the bridge by a veth pair (eth0 in the
// host, v-<host> in the switch). Each host has one address in a private
// /24, lo up, and, when the kernel has netem, 2 ms of delay on eth0. The
// test process stays in the root namespace, whose interfaces and routes
// are never touched; it reaches a host by creating sockets inside the
// host's namespace (hosts.dial), and runs programs there with
// ip netns exec.

// netnsPrefix starts the name of every namespace a test run creates; the
// run's process id follows, then "-".
const netnsPrefix = "dyne2e"

// hosts is a network of simulated machines.
type hosts struct {
	t      testing.TB
	prefix string            // e.g. "dyne2e4242-"
	addr   map[string]string // host name -> its IPv4 address
	delay  bool              // whether eth0 has netem delay
}

// needNetns skips the test unless it can build network namespaces.
func needNetns(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to build network namespaces (ip netns); run make test as root")
	}
	for _, tool := range []string{"ip", "bridge"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (iproute2) to build network namespaces: %v; install iproute2 (.ci/run does)", tool, err)
		}
	}
}

// newHosts builds the switch and one host per name, and deletes them all
// when the test ends, whatever its outcome. Namespaces left by an earlier
// run that was killed are deleted first.
func newHosts(t testing.TB, names ...string) *hosts {
	t.Helper()
	sweepNetns(t)
	pid := os.Getpid()
	h := &hosts{t: t, prefix: fmt.Sprintf("%s%d-", netnsPrefix, pid), addr: map[string]string{}, delay: true}
	// The hosts see only one another, so their subnet cannot clash with
	// the machine's; the third octet differs between concurrent runs only
	// to keep their logs apart.
	subnet := fmt.Sprintf("10.213.%d", pid%256)
	sw := h.ns("switch")
	t.Cleanup(func() { h.delete(append([]string{"switch"}, names...)) })
	run(t, "ip", "netns", "add", sw)
	run(t, "ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", sw, "link", "set", "br0", "up")
	for i, name := range names {
		ns, port := h.ns(name), "v-"+name
		if len(port) > 15 {
			t.Fatalf("host name %q is too long for an interface name", name)
		}
		h.addr[name] = fmt.Sprintf("%s.%d", subnet, 10+i)
		run(t, "ip", "netns", "add", ns)
		run(t, "ip", "-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
		run(t, "ip", "-n", sw, "link", "set", port, "master", "br0", "up")
		run(t, "ip", "-n", ns, "addr", "add", h.addr[name]+"/24", "dev", "eth0")
		run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
		if h.delay {
			out, err := exec.Command("tc", "-n", ns, "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", "2ms").CombinedOutput()
			switch {
			case err == nil:
			case strings.Contains(string(out), "unknown"), errors.Is(err, exec.ErrNotFound):
				h.delay = false
				t.Logf("no netem in this kernel (tc: %s): the hosts' links have no added delay", strings.TrimSpace(string(out)))
			default:
				t.Fatalf("tc netem on %s: %v: %s", ns, err, out)
			}
		}
	}
	return h
}

// ns is the namespace name of host.
func (h *hosts) ns(host string) string { return h.prefix + host }

// cut partitions host from every other host: the switch drops every frame
// from and to its port (the port is disabled, as a switch that lost the
// link would). The host's interface stays up: processes there notice
// nothing but silence. It needs only the bridge, not netem, which some
// kernels lack.
func (h *hosts) cut(t testing.TB, host string) {
	t.Helper()
	run(t, "bridge", "-n", h.ns("switch"), "link", "set", "dev", "v-"+host, "state", "0")
}

// restore ends cut: the port forwards again.
func (h *hosts) restore(t testing.TB, host string) {
	t.Helper()
	run(t, "bridge", "-n", h.ns("switch"), "link", "set", "dev", "v-"+host, "state", "3")
}

// delete deletes the namespaces of the hosts (and the switch); their
// interfaces go with them. A process still inside keeps its namespace
// alive until it exits, but the name is gone.
func (h *hosts) delete(names []string) {
	for _, name := range names {
		if out, err := exec.Command("ip", "netns", "delete", h.ns(name)).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") {
			h.t.Errorf("ip netns delete %s: %v: %s", h.ns(name), err, out)
		}
	}
}

// sweepNetns deletes the namespaces of earlier runs whose process is gone
// (a run killed before its cleanups).
func sweepNetns(t testing.TB) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	stale := regexp.MustCompile(`^` + netnsPrefix + `(\d+)-\S+`)
	for _, line := range strings.Split(string(out), "\n") {
		m := stale.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // that run may still be going
		}
		if err := exec.Command("ip", "netns", "delete", m[0]).Run(); err == nil {
			t.Logf("deleted namespace %s, left by an earlier run", m[0])
		}
	}
}

// run runs a command that must succeed.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// start runs bin on host, as a process of the test (see startProcess),
// and gives it an HTTP client that connects from inside host.
func (h *hosts) start(t testing.TB, host, name, bin string, addrLine *regexp.Regexp, env []string, args ...string) *process {
	t.Helper()
	p := startProcess(t, name, "ip", addrLine, env, append([]string{"netns", "exec", h.ns(host), bin}, args...)...)
	p.http = h.client(t, host)
	return p
}

// client returns an HTTP client whose connections start on host.
func (h *hosts) client(t testing.TB, host string) *http.Client {
	transport := &http.Transport{DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
		return h.dial(ctx, host, network, address)
	}}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 60 * time.Second}
}

// dial connects to address from host: the socket is created inside the
// host's namespace and keeps it; the test process stays where it is.
func (h *hosts) dial(ctx context.Context, host, network, address string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	// A goroutine of its own: if its thread cannot return to the
	// original namespace, the thread stays locked and dies with it.
	ch := make(chan result, 1)
	go func() {
		conn, err := dialInNetns(ctx, filepath.Join("/var/run/netns", h.ns(host)), network, address)
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// dialInNetns dials from the network namespace at path, on a thread of its
// own that moves into the namespace and back.
func dialInNetns(ctx context.Context, path, network, address string) (net.Conn, error) {
	goruntime.LockOSThread()
	home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("open this thread's network namespace: %w", err)
	}
	defer unix.Close(home)
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("enter %s: %w", path, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if rerr := unix.Setns(home, unix.CLONE_NEWNET); rerr != nil {
		// Stay locked: the thread ends with the calling goroutine.
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("return from %s: %w", path, rerr)
	}
	goruntime.UnlockOSThread()
	return conn, err
}

// Servers on a simulated host. There is no etcd or NATS binary: the test
// binary runs itself on the host (ip netns exec) with serversHostEnv set,
// and TestMain then runs serveNetns instead of the tests.
const (
	serversHostEnv = "E2E_NETNS_SERVERS_HOST" // the address to listen on
	serversDirEnv  = "E2E_NETNS_SERVERS_DIR"  // etcd's data directory
)

// serversLine is what serveNetns prints once both servers listen.
var serversLine = regexp.MustCompile(`e2e servers: etcd=(\S+) nats=(\S+)`)

// startServers starts etcd and NATS on host; they listen on its address,
// on ports the kernel picks. etcd keeps its data in a directory of the
// test. It returns their URLs.
func (h *hosts) startServers(t testing.TB, host string) (p *process, etcdURL, natsURL string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{serversHostEnv + "=" + h.addr[host], serversDirEnv + "=" + t.TempDir()}
	p = h.start(t, host, "etcd+nats", self, serversLine, env, "-test.run=^$")
	m := p.waitLine(t, addrTimeout, "etcd and NATS to listen", serversLine)
	return p, m[1], m[2]
}

// serveNetns runs an embedded etcd (etcd's default limits, data in dir)
// and a NATS server, both on host, prints their URLs and serves until
// SIGTERM. It returns the exit code.
func serveNetns(host, dir string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "e2e servers:", err)
		return 1
	}
	if dir == "" {
		return fail(errors.New(serversDirEnv + " is not set"))
	}
	cfg := testenv.EtcdConfig(dir, url.URL{Scheme: "http", Host: net.JoinHostPort(host, "0")})
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return fail(err)
	}
	defer etcd.Close()
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		return fail(errors.New("etcd not ready after 30s"))
	}
	nats, err := server.NewServer(&server.Options{Host: host, Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
	if err != nil {
		return fail(err)
	}
	go nats.Start()
	defer nats.Shutdown()
	if !nats.ReadyForConnections(10 * time.Second) {
		return fail(errors.New("nats not ready after 10s"))
	}
	fmt.Printf("e2e servers: etcd=http://%s nats=%s\n", etcd.Clients[0].Addr(), nats.ClientURL())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	return 0
}
