package testenv

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is an in-process NATS server listening on 127.0.0.1.
type NATS struct {
	// URL is the client URL, e.g. "nats://127.0.0.1:42223", or with TLS
	// "tls://127.0.0.1:42223".
	URL string
	// CredentialsFile, in operator mode (NATSOptions.Operator), is a user
	// credentials file (JWT and seed) the server accepts.
	CredentialsFile string

	mu       sync.Mutex
	opts     NATSOptions
	operator *operator // in operator mode
	port     int       // server.RANDOM_PORT until the first start, then its port
	jsDir    string    // JetStream's store, with NATSOptions.JetStream
	running  *server.Server
}

// NATSOptions turn on TLS and authentication in StartNATSWith. Set at
// most one authentication method.
type NATSOptions struct {
	// TLS, if set, requires TLS with this server certificate (its hosts
	// must include 127.0.0.1).
	TLS *Certs
	// VerifyClients requires clients to present a certificate issued by
	// TLS.CAFile (mutual TLS).
	VerifyClients bool
	// Token requires this authorization token.
	Token string
	// Username and Password require this user.
	Username, Password string
	// NKey requires the user of this public nkey ("U...", see
	// NewUserNKey) to sign the server's nonce.
	NKey string
	// Operator runs the server in operator (JWT) mode: it trusts an
	// ephemeral operator, one account of it, and the user whose
	// credentials are in NATS.CredentialsFile.
	Operator bool
	// JetStream turns JetStream on, with its store in a directory of
	// the test's that outlives a Stop and Start.
	JetStream bool
}

// StartNATS starts a NATS server on a port the kernel picks. It is
// stopped when the test ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	return StartNATSWith(t, NATSOptions{})
}

// StartNATSWith starts a NATS server as StartNATS does, with TLS or
// authentication as opts say.
func StartNATSWith(t testing.TB, opts NATSOptions) *NATS {
	t.Helper()
	n := &NATS{port: server.RANDOM_PORT, opts: opts}
	if opts.Operator {
		op, err := newOperator(t.TempDir())
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		n.operator, n.CredentialsFile = op, op.credsFile
	}
	if opts.JetStream {
		n.jsDir = t.TempDir()
	}
	if err := n.Start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(n.Stop)
	return n
}

// Start starts the server again after Stop, on the same port, so that
// clients reconnect. NATS serves no unix sockets: a restart must bind the
// port the first start was given, and if another process took it in the
// meantime Start retries for a few seconds, then fails.
func (n *NATS) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running != nil {
		return nil
	}
	var err error
	for range 50 {
		var s *server.Server
		if s, err = n.start(); err == nil {
			n.running = s
			if n.port == server.RANDOM_PORT {
				addr := s.Addr().(*net.TCPAddr)
				n.port = addr.Port
				n.URL = "nats://" + addr.String()
				if n.opts.TLS != nil {
					n.URL = "tls://" + addr.String()
				}
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// start starts one server and waits until it accepts connections.
func (n *NATS) start() (*server.Server, error) {
	opts := &server.Options{
		Host:   "127.0.0.1",
		Port:   n.port,
		NoLog:  true,
		NoSigs: true,
	}
	if n.jsDir != "" {
		opts.JetStream, opts.StoreDir = true, n.jsDir
	}
	if err := n.secure(opts); err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(5 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("start nats: not ready on 127.0.0.1 port %d", n.port)
	}
	return s, nil
}

// Stop shuts the server down. It is safe to call twice.
func (n *NATS) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running == nil {
		return
	}
	n.running.Shutdown()
	n.running.WaitForShutdown()
	n.running = nil
}
