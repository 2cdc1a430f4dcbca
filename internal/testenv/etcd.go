package testenv

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is an embedded single-member etcd server. Clients reach it over a
// unix socket, so no TCP port is picked that another process could take
// first, and a restart finds its address free.
type Etcd struct {
	// URL is the client URL, e.g. "unix:///tmp/etcd123/client.sock". The
	// etcd client (go.etcd.io/etcd/client/v3) takes it as an endpoint, as
	// does ETCD_ENDPOINTS in the binaries.
	URL string

	mu      sync.Mutex
	dir     string
	client  url.URL
	running *embed.Etcd
}

// StartEtcd starts an etcd server with its data in a temporary directory.
// It is stopped when the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	sock, err := socketDir()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(sock) })
	e := &Etcd{dir: t.TempDir()}
	e.client = url.URL{Scheme: "unix", Path: filepath.Join(sock, "client.sock")}
	e.URL = e.client.String()
	if err := e.Start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(e.Stop)
	return e
}

// socketDir makes a directory for the client socket. Its path is short:
// a unix socket's path is limited to about 100 bytes, which a directory
// named after a long test (t.TempDir) could exceed.
func socketDir() (string, error) {
	dir, err := os.MkdirTemp("", "etcd")
	if err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	return dir, nil
}

// Start starts the server again after Stop, with the same data and address.
func (e *Etcd) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running != nil {
		return nil
	}
	srv, err := embed.StartEtcd(e.config())
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-srv.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		srv.Close()
		return fmt.Errorf("start etcd: not ready after 30s")
	}
	e.running = srv
	return nil
}

// config is the server's configuration. The peer URL is 127.0.0.1:0: a
// single member never dials its peers, so the peer listener may take any
// free port, a new one at each start; the advertised peer URL stays the
// same, as the member's identity (stored in the data) requires.
func (e *Etcd) config() *embed.Config {
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = e.dir
	// The embedded server logs errors while it shuts down; tests that
	// stop it on purpose do not want them.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls = []url.URL{e.client}
	cfg.AdvertiseClientUrls = []url.URL{e.client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// etcd's default request limit (1.5 MiB), as every managed etcd has:
	// nothing the stack writes may need more (discovery.MaxValueSize).
	return cfg
}

// Stop stops the server, keeping its data. It is safe to call twice.
func (e *Etcd) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running == nil {
		return
	}
	e.running.Close()
	<-e.running.Server.StopNotify()
	e.running = nil
}
