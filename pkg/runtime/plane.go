package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/natsplane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/tcpplane"
)

// requestPlane carries request envelopes to instances and acks back.
type requestPlane interface {
	// serve starts accepting requests for one endpoint instance and returns
	// the transport to advertise in discovery.
	serve(ctx context.Context, ep EndpointID, id uint64, h plane.Handler) (Transport, error)
	// stopServing stops accepting requests for that transport.
	stopServing(t Transport)
	// send delivers one envelope and waits for the ack.
	send(ctx context.Context, t Transport, headers map[string]string, msg []byte) error
	close() error
}

// tcpPlane is the TCP request plane: one shared listener per process,
// started on first use, and a pooled pipelined client.
type tcpPlane struct {
	cfg    tcpplane.ServerConfig
	host   string // advertised host
	log    *slog.Logger
	client *tcpplane.Client
	bg     *background

	mu     sync.Mutex
	server *tcpplane.Server
}

func newTCPPlane(cfg Config, log *slog.Logger, bg *background) *tcpPlane {
	return &tcpPlane{
		cfg: tcpplane.ServerConfig{
			Addr:           net.JoinHostPort(cfg.TCPBindHost(), strconv.Itoa(cfg.TCPPort)),
			MaxMessageSize: cfg.MaxMessageSize,
			Logger:         log,
		},
		host: cfg.TCPHost,
		log:  log,
		client: tcpplane.NewClient(tcpplane.ClientConfig{
			ConnectTimeout: cfg.TCPConnectTimeout,
			AckTimeout:     cfg.TCPAckTimeout,
			MaxMessageSize: cfg.MaxMessageSize,
			Logger:         log,
		}),
		bg: bg,
	}
}

func (p *tcpPlane) listener() (*tcpplane.Server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server != nil {
		return p.server, nil
	}
	s, err := tcpplane.Listen(p.cfg)
	if err != nil {
		return nil, fmt.Errorf("runtime: tcp request plane: %w", err)
	}
	if !p.bg.goRun("tcp request plane", s.Run) {
		s.Close()
		return nil, ErrRuntimeClosed
	}
	p.server = s
	return s, nil
}

func (p *tcpPlane) serve(_ context.Context, ep EndpointID, id uint64, h plane.Handler) (Transport, error) {
	s, err := p.listener()
	if err != nil {
		return Transport{}, err
	}
	key := TCPRoutingKey(ep, id)
	s.Register(key, h)
	_, port, _ := net.SplitHostPort(s.Addr())
	return Transport{TCP: net.JoinHostPort(p.host, port) + "/" + key}, nil
}

func (p *tcpPlane) stopServing(t Transport) {
	_, key, err := t.splitTCP()
	p.mu.Lock()
	s := p.server
	p.mu.Unlock()
	if err == nil && s != nil {
		s.Unregister(key)
	}
}

func (p *tcpPlane) send(ctx context.Context, t Transport, headers map[string]string, msg []byte) error {
	if t.TCP == "" {
		return fmt.Errorf("runtime: instance has no tcp transport (it serves %+v)", t)
	}
	addr, key, err := t.splitTCP()
	if err != nil {
		return err
	}
	return p.client.Send(ctx, addr, key, headers, msg)
}

func (p *tcpPlane) close() error {
	p.mu.Lock()
	s := p.server
	p.mu.Unlock()
	var errs []error
	if s != nil {
		errs = append(errs, s.Close())
	}
	errs = append(errs, p.client.Close())
	return errors.Join(errs...)
}

// natsPlane is the NATS request plane: one subject per instance.
type natsPlane struct {
	server *natsplane.Server
	client *natsplane.Client
}

func newNATSPlane(nc *nats.Conn, timeout time.Duration, log *slog.Logger) *natsPlane {
	return &natsPlane{server: natsplane.NewServer(nc, log), client: natsplane.NewClient(nc, timeout)}
}

func (p *natsPlane) serve(_ context.Context, ep EndpointID, id uint64, h plane.Handler) (Transport, error) {
	subject := NATSSubject(ep, id)
	if err := p.server.Register(subject, h); err != nil {
		return Transport{}, fmt.Errorf("runtime: nats request plane: %w", err)
	}
	return Transport{NATS: subject}, nil
}

func (p *natsPlane) stopServing(t Transport) {
	if t.NATS != "" {
		_ = p.server.Unregister(t.NATS)
	}
}

func (p *natsPlane) send(ctx context.Context, t Transport, headers map[string]string, msg []byte) error {
	if t.NATS == "" {
		return fmt.Errorf("runtime: instance has no nats transport (it serves %+v)", t)
	}
	return p.client.Send(ctx, t.NATS, headers, msg)
}

func (p *natsPlane) close() error { return p.server.Close() }
