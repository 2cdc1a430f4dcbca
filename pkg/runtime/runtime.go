package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// ErrRuntimeClosed is returned by calls on a runtime that is shutting down.
var ErrRuntimeClosed = errors.New("runtime: closed")

// Deps are the collaborators a runtime is given rather than builds.
type Deps struct {
	// Logger receives the runtime's few log lines (nil: discard).
	Logger *slog.Logger
	// Registry receives the runtime metrics and is served on the status
	// server's /metrics (nil: a new registry).
	Registry *prometheus.Registry
	// MemSpace is shared by the runtimes of one process that use the mem
	// discovery back-end (nil: a space of this runtime's own).
	MemSpace *discovery.MemSpace
	// TracerProvider makes the span of each request a worker handles (a
	// child of the caller's span, whose trace context travels in the
	// request headers); nil: no spans, the trace context still travels.
	TracerProvider trace.TracerProvider
}

// tracerName names the runtime's tracer (instrumentation scope).
const tracerName = "github.com/dynamo-go/dynamo/pkg/runtime"

// DistributedRuntime is one process's membership in a Dynamo deployment:
// its discovery lease, its request plane, the server workers call home to,
// and the endpoints it serves or calls. Create it with New, run it with Run,
// and derive Namespace -> Component -> Endpoint from it.
type DistributedRuntime struct {
	cfg      Config
	log      *slog.Logger
	tracer   trace.Tracer
	store    discovery.Store
	nc       *nats.Conn
	plane    requestPlane
	mux      *respstream.Pool // this worker's shared response connections
	bg       *background
	registry *prometheus.Registry
	metrics  *metrics
	health   *health
	tracker  *tracker
	seq      sequences // event-plane sequence numbers per subject

	shutdown     chan struct{} // closed when endpoint shutdown begins
	shutdownOnce sync.Once
	closeOnce    sync.Once

	mu      sync.Mutex
	streams *respstream.Server
	clients map[EndpointID]*Client
	status  *statusServer
}

// New connects to discovery (and NATS for the nats request plane) and
// obtains this process's instance id. Nothing is served until Run.
// Call Run soon: it keeps the discovery lease alive.
func New(ctx context.Context, cfg Config, deps Deps) (*DistributedRuntime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := deps.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	rt := &DistributedRuntime{
		cfg:      cfg,
		log:      log,
		tracer:   telemetry.Tracer(deps.TracerProvider, tracerName),
		bg:       newBackground(log),
		mux:      respstream.NewPool(cfg.TCPConnectTimeout, cfg.ResponseMuxIdleTimeout, log),
		registry: reg,
		metrics:  m,
		health:   newHealth(cfg.StartReady),
		tracker:  newTracker(),
		shutdown: make(chan struct{}),
		clients:  make(map[EndpointID]*Client),
	}
	connectCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	// NATS and etcd are waited for at the same time, each with its own
	// line while it is missing; the lease is renewed while NATS is
	// waited for, so that a late NATS costs neither the lease nor an
	// etcd outage.
	var natsDone chan natsConn
	if cfg.RequestPlane == PlaneNATS {
		natsDone = make(chan natsConn, 1)
		go func() {
			nc, err := connectNATS(connectCtx, cfg, log)
			natsDone <- natsConn{nc, err}
		}()
	}
	rt.store, err = openStore(connectCtx, cfg, deps, log)
	if err != nil {
		if natsDone != nil {
			cancel()
			if c := <-natsDone; c.nc != nil {
				c.nc.Close()
			}
		}
		return nil, err
	}
	if natsDone != nil {
		c := waitNATS(connectCtx, natsDone, rt.store, cfg.LeaseTTL, log)
		if c.err != nil {
			rt.store.Close()
			return nil, c.err
		}
		rt.nc = c.nc
		rt.plane = newNATSPlane(rt.nc, cfg.NATSRequestTimeout, log)
	} else {
		rt.plane = newTCPPlane(cfg, log, rt.bg)
	}
	if err := rt.registerDiscoveryMetrics(reg); err != nil {
		rt.store.Close()
		if rt.nc != nil {
			rt.nc.Close()
		}
		return nil, fmt.Errorf("runtime: metrics: %w", err)
	}
	return rt, nil
}

// natsConn is connectNATS's result.
type natsConn struct {
	nc  *nats.Conn
	err error
}

// waitNATS waits for connectNATS's result, renewing store's lease every
// third of its TTL meanwhile (when the store has one to renew).
func waitNATS(ctx context.Context, done <-chan natsConn, store discovery.Store, ttl time.Duration, log *slog.Logger) natsConn {
	type renewer interface{ Renew(context.Context) error }
	r, _ := store.(renewer)
	if ttl <= 0 {
		ttl = discovery.DefaultTTL
	}
	tick := time.NewTicker(max(ttl/3, 500*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case c := <-done:
			return c
		case <-tick.C:
			if r != nil {
				if err := r.Renew(ctx); err != nil {
					log.Debug("runtime: renewing the lease while waiting for NATS", "err", err)
				}
			}
		}
	}
}

func openStore(ctx context.Context, cfg Config, deps Deps, log *slog.Logger) (discovery.Store, error) {
	switch cfg.Discovery {
	case DiscoveryFile:
		dir := cfg.FileDir
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "dynamo_store_kv")
		}
		return discovery.NewFile(discovery.FileConfig{Dir: dir, TTL: cfg.LeaseTTL, Logger: log})
	case DiscoveryMem:
		space := deps.MemSpace
		if space == nil {
			space = discovery.NewMemSpace()
		}
		return space.NewStore(), nil
	default:
		tlsCfg, err := cfg.etcdTLS()
		if err != nil {
			return nil, err
		}
		s, err := discovery.NewEtcd(ctx, discovery.EtcdConfig{
			Endpoints: cfg.EtcdEndpoints,
			TTL:       cfg.LeaseTTL,
			Username:  cfg.EtcdUsername,
			Password:  cfg.EtcdPassword,
			TLS:       tlsCfg,
			Logger:    log,
			WaitAdvice: "ETCD_ENDPOINTS sets where, ETCD_STARTUP_CONNECT_TIMEOUT_SECONDS how long; " +
				"--discovery-backend file needs no etcd on one machine",
		})
		if err != nil {
			return nil, connectError(fmt.Sprintf("etcd at %v", cfg.EtcdEndpoints), err, cfg.etcdSettings())
		}
		return s, nil
	}
}

// connectNATS connects to NATS, retrying until ctx ends unless retrying
// cannot help (credentials refused, TLS handshake failed).
func connectNATS(ctx context.Context, cfg Config, log *slog.Logger) (*nats.Conn, error) {
	opts, err := natsSecurity(cfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		nats.Name("dynamo-go"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("runtime: nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("runtime: nats reconnected") }),
	)
	what := "nats at " + redactURLs(cfg.NATSServer)
	var waiting time.Time // when the first attempt failed; zero before
	for {
		nc, err := nats.Connect(cfg.NATSServer, opts...)
		if err == nil {
			if !waiting.IsZero() {
				log.Info("runtime: nats reached", "server", redactURLs(cfg.NATSServer), "waited", time.Since(waiting).Round(time.Millisecond))
			}
			return nc, nil
		}
		if he := permanentNATS(err); he != nil {
			return nil, connectError(what, he, cfg.natsSettings())
		}
		if waiting.IsZero() {
			waiting = time.Now()
			args := []any{"server", redactURLs(cfg.NATSServer), "err", err}
			if d, ok := ctx.Deadline(); ok {
				args = append(args, "until", d.Format(time.TimeOnly))
			}
			log.Warn("runtime: waiting for nats; retrying", append(args, "advice",
				"NATS_SERVER sets where, ETCD_STARTUP_CONNECT_TIMEOUT_SECONDS how long; --request-plane tcp needs no NATS")...)
		}
		select {
		case <-ctx.Done():
			return nil, connectError(what, err, cfg.natsSettings())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// InstanceID is this process's instance id (its discovery lease id).
func (rt *DistributedRuntime) InstanceID() uint64 { return rt.store.ID() }

// Config returns the effective configuration, defaults filled in.
func (rt *DistributedRuntime) Config() Config { return rt.cfg }

// Registry returns the Prometheus registry the runtime's metrics live in.
func (rt *DistributedRuntime) Registry() *prometheus.Registry { return rt.registry }

// Store returns the discovery store, for records other than endpoint
// instances (model cards). Keys written through it live with the lease.
func (rt *DistributedRuntime) Store() discovery.Store { return rt.store }

// Done is closed when the runtime is closed, or when a discovery back-end
// that cannot recover loses its liveness (the file store); a worker must
// stop serving then. The etcd back-end never loses it for good: after an
// outage it takes a new lease and writes its keys again.
func (rt *DistributedRuntime) Done() <-chan struct{} { return rt.store.Done() }

// Run keeps the runtime alive until ctx ends, then shuts down in order:
// served endpoints unregister and drain (bounded by Config.DrainTimeout),
// then the lease is revoked and connections close. An etcd outage, however
// long, does not end it (see discovery.Etcd). It returns nil after a clean
// shutdown, and discovery.ErrLeaseLost if a back-end that cannot recover
// lost its liveness.
func (rt *DistributedRuntime) Run(ctx context.Context) error {
	leaseErr := make(chan error, 1)
	if !rt.bg.goRun("discovery keep-alive", func(c context.Context) error {
		err := rt.store.Run(c)
		leaseErr <- err
		return err
	}) {
		return ErrRuntimeClosed
	}
	if rt.cfg.SystemPort != SystemPortDisabled {
		s, err := rt.statusServer()
		if err != nil {
			rt.Close()
			return err
		}
		rt.bg.goRun("status server", s.run)
	}
	var result error
	select {
	case <-ctx.Done():
	case err := <-leaseErr:
		if err != nil {
			rt.log.Error("runtime: discovery lease lost; shutting down", "err", err)
			result = err
		}
	case <-rt.shutdown:
	}
	rt.beginShutdown()
	rt.tracker.wait(max(rt.cfg.GracePeriod, 0) + rt.cfg.DrainTimeout + 10*time.Second)
	if err := rt.Close(); err != nil && result == nil {
		result = err
	}
	return result
}

// Shutdown starts the ordered shutdown that Run performs when its context
// ends: served endpoints unregister and drain, then Run closes the runtime.
func (rt *DistributedRuntime) Shutdown() { rt.beginShutdown() }

func (rt *DistributedRuntime) beginShutdown() {
	rt.shutdownOnce.Do(func() { close(rt.shutdown) })
}

// Close stops everything at once: background tasks end, the lease is
// revoked (this process's keys vanish), connections close. Prefer ending
// Run's context, which drains first. Close is idempotent.
func (rt *DistributedRuntime) Close() error {
	var err error
	rt.closeOnce.Do(func() {
		rt.beginShutdown()
		rt.bg.stop()
		rt.mux.Close()
		errs := []error{rt.plane.close(), rt.store.Close()}
		if rt.nc != nil {
			rt.nc.Close()
		}
		err = errors.Join(errs...)
	})
	return err
}

// Namespace returns a namespace handle. Names are checked when used.
func (rt *DistributedRuntime) Namespace(name string) Namespace {
	return Namespace{rt: rt, name: name}
}

// Endpoint returns the handle of an endpoint given by its full id.
func (rt *DistributedRuntime) Endpoint(id EndpointID) *Endpoint {
	return &Endpoint{rt: rt, id: id}
}

// Namespace groups components. Namespaces are not registered anywhere.
type Namespace struct {
	rt   *DistributedRuntime
	name string
}

// Name returns the namespace name.
func (n Namespace) Name() string { return n.name }

// Component returns a component of the namespace.
func (n Namespace) Component(name string) Component {
	return Component{rt: n.rt, namespace: n.name, name: name}
}

// Component is a named service within a namespace (e.g. "backend").
type Component struct {
	rt        *DistributedRuntime
	namespace string
	name      string
}

// Name returns the component name.
func (c Component) Name() string { return c.name }

// Endpoint returns an endpoint of the component.
func (c Component) Endpoint(name string) *Endpoint {
	return c.rt.Endpoint(EndpointID{Namespace: c.namespace, Component: c.name, Name: name})
}

// Endpoint is a named operation of a component (e.g. "generate"). A process
// serves it with Serve; callers reach its instances through Client.
type Endpoint struct {
	rt *DistributedRuntime
	id EndpointID
}

// ID returns the endpoint's full id.
func (e *Endpoint) ID() EndpointID { return e.id }
