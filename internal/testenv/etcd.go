package testenv

import (
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is an embedded single-member etcd server.
type Etcd struct {
	// URL is the client URL, e.g. "http://127.0.0.1:23791".
	URL string

	mu      sync.Mutex
	dir     string
	client  url.URL
	peer    url.URL
	running *embed.Etcd
}

// StartEtcd starts an etcd server with its data in a temporary directory.
// It is stopped when the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	e := &Etcd{dir: t.TempDir()}
	e.client = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", FreePort(t))}
	e.peer = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", FreePort(t))}
	e.URL = e.client.String()
	if err := e.Start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(e.Stop)
	return e
}

// Start starts the server again after Stop, with the same data and address.
func (e *Etcd) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running != nil {
		return nil
	}
	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = e.dir
	// The embedded server logs errors while it shuts down; tests that
	// stop it on purpose do not want them.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls = []url.URL{e.client}
	cfg.AdvertiseClientUrls = []url.URL{e.client}
	cfg.ListenPeerUrls = []url.URL{e.peer}
	cfg.AdvertisePeerUrls = []url.URL{e.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Model cards embed tokenizers of several MB (discovery.MaxValueSize).
	cfg.MaxRequestBytes = 33 << 20
	var (
		srv *embed.Etcd
		err error
	)
	// The ports were free a moment ago; after a Stop the kernel may need a
	// moment before they can be bound again.
	for range 50 {
		srv, err = embed.StartEtcd(cfg)
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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
