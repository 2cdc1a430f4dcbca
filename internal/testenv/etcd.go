package testenv

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is an embedded single-member etcd server. Clients reach it over a
// unix socket, so no TCP port is picked that another process could take
// first, and a restart finds its address free. With TLS it listens on
// 127.0.0.1 instead, on a port the kernel picks at the first start.
type Etcd struct {
	// URL is the client URL, e.g. "unix:///tmp/etcd123/client.sock" or,
	// with TLS, "https://127.0.0.1:40123". The etcd client
	// (go.etcd.io/etcd/client/v3) takes it as an endpoint, as does
	// ETCD_ENDPOINTS in the binaries.
	URL string

	mu      sync.Mutex
	dir     string
	opts    EtcdOptions
	client  url.URL
	running *embed.Etcd
}

// EtcdOptions turn on TLS and authentication in StartEtcdWith.
type EtcdOptions struct {
	// TLS, if set, serves clients over TLS with this certificate (its
	// hosts must include 127.0.0.1), on https://127.0.0.1:<port>.
	TLS *Certs
	// ClientCertAuth requires clients to present a certificate issued by
	// TLS.CAFile (mutual TLS).
	ClientCertAuth bool
	// Users, if set, enables authentication, with a root user (whose
	// password nobody knows) and these users (name -> password), each
	// allowed to read and write every key, or the keys under Prefix.
	Users  map[string]string
	Prefix string
}

// StartEtcd starts an etcd server with its data in a temporary directory.
// It is stopped when the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	return StartEtcdWith(t, EtcdOptions{})
}

// StartEtcdWith starts an etcd server as StartEtcd does, with TLS or
// authentication as opts say.
func StartEtcdWith(t testing.TB, opts EtcdOptions) *Etcd {
	t.Helper()
	e := &Etcd{dir: t.TempDir(), opts: opts}
	if opts.TLS != nil {
		e.client = url.URL{Scheme: "https", Host: "127.0.0.1:0"}
	} else {
		sock, err := socketDir()
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(sock) })
		e.client = url.URL{Scheme: "unix", Path: filepath.Join(sock, "client.sock")}
		e.URL = e.client.String()
	}
	if err := e.Start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(e.Stop)
	if len(opts.Users) > 0 {
		if err := e.enableAuth(); err != nil {
			t.Fatalf("testenv: %v", err)
		}
	}
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
	if e.client.Port() == "0" {
		// The first start of a TLS server: keep the port the kernel gave.
		e.client.Host = srv.Clients[0].Addr().String()
		e.URL = e.client.String()
	}
	return nil
}

// config is the server's configuration.
func (e *Etcd) config() *embed.Config {
	cfg := EtcdConfig(e.dir, e.client)
	// The embedded server logs errors while it shuts down; tests that
	// stop it on purpose do not want them.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	if c := e.opts.TLS; c != nil {
		cfg.ClientTLSInfo = transportInfo(c)
		cfg.ClientTLSInfo.ClientCertAuth = e.opts.ClientCertAuth
	}
	return cfg
}

// EtcdConfig is the configuration of a single-member etcd server with its
// data in dir, serving clients on client (a unix socket, or an http URL
// on port 0 for a port the kernel picks: read it from the started
// server's Clients). The peer URL is 127.0.0.1:0: a single member never
// dials its peers, so the peer listener may take any free port, a new one
// at each start; the advertised peer URL stays the same, as the member's
// identity (stored in the data) requires. Limits are etcd's defaults.
func EtcdConfig(dir string, client url.URL) *embed.Config {
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// etcd's default request limit (1.5 MiB), as every managed etcd has:
	// nothing the stack writes may need more (discovery.MaxValueSize).
	return cfg
}

func transportInfo(c *Certs) transport.TLSInfo {
	return transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.CAFile}
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
