package runtime

import (
	"fmt"
	"net"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// Discovery back-ends and request planes (the values of
// --discovery-backend / DYN_DISCOVERY_BACKEND and --request-plane /
// DYN_REQUEST_PLANE).
const (
	DiscoveryEtcd = "etcd"
	DiscoveryFile = "file"
	DiscoveryMem  = "mem"

	PlaneTCP  = "tcp"
	PlaneNATS = "nats"
)

// Config configures a DistributedRuntime. The zero value of every field
// means the default given in its comment (the reference system's default).
// cmd/ fills it from flags and the environment; nothing below reads either.
type Config struct {
	// Discovery is "etcd" (default), "file" or "mem".
	Discovery string
	// EtcdEndpoints default to ["http://localhost:2379"].
	EtcdEndpoints []string
	// EtcdUsername and EtcdPassword authenticate to etcd when set
	// (ETCD_AUTH_USERNAME, ETCD_AUTH_PASSWORD; both or neither).
	EtcdUsername, EtcdPassword string
	// EtcdTLS names the PEM files for TLS to etcd (ETCD_AUTH_CA,
	// ETCD_AUTH_CLIENT_CERT, ETCD_AUTH_CLIENT_KEY); they require https://
	// endpoints. An https:// endpoint without them is verified against the
	// system's roots. Zero: plain http:// (the default endpoint becomes
	// https://localhost:2379 when a file is set).
	EtcdTLS TLSFiles
	// LeaseTTL is the liveness TTL of this process's keys (default 10 s).
	LeaseTTL time.Duration
	// ConnectTimeout bounds how long New keeps trying to reach etcd or NATS
	// (default 120 s, ETCD_STARTUP_CONNECT_TIMEOUT_SECONDS).
	ConnectTimeout time.Duration
	// FileDir is the file store's directory (default $TMPDIR/dynamo_store_kv).
	FileDir string

	// RequestPlane is "tcp" (default) or "nats".
	RequestPlane string
	// NATSServer is the NATS URL (default nats://localhost:4222). NATS is
	// connected only for the nats request plane.
	NATSServer string
	// NATSRequestTimeout bounds a NATS request and its ack (default 10 s).
	NATSRequestTimeout time.Duration
	// NATSAuth authenticates to NATS (NATS_AUTH_*; zero: no credentials).
	NATSAuth NATSAuth
	// NATSTLS names the PEM files for TLS to NATS (NATS_TLS_CA,
	// NATS_TLS_CERT, NATS_TLS_KEY). A file, or a tls:// URL, makes the
	// connection TLS (without files: verified against the system's roots).
	NATSTLS TLSFiles

	// TCPHost is the host advertised for this process's TCP request-plane
	// listener (DYN_TCP_RPC_HOST; default: the first routable local IPv4,
	// else 127.0.0.1). TCPPort is its port (0 = any).
	TCPHost string
	TCPPort int
	// ResponseStreamHost and ResponseStreamPort are the same for the server
	// workers call home to (DYN_TCP_RESPONSE_STREAM_HOST / _PORT).
	ResponseStreamHost string
	ResponseStreamPort int
	// TCPConnectTimeout (default 5 s) and TCPAckTimeout (default 5 s) bound
	// connecting to a worker and waiting for its ack; the first also bounds
	// a worker calling home.
	TCPConnectTimeout, TCPAckTimeout time.Duration
	// MaxMessageSize caps one frame (default 32 MiB).
	MaxMessageSize int
	// CallHomeTimeout bounds the wait between a worker's ack and its call
	// home (default 60 s). A worker that leaves discovery fails the wait at
	// once.
	CallHomeTimeout time.Duration
	// OrphanedStreamTimeout is how long an established response stream may
	// stay silent once its worker has left discovery (its lease expired:
	// the process is frozen, or its host cut off) before the call fails
	// Disconnected, which migration re-issues (default 5 s,
	// DYN_ORPHANED_STREAM_TIMEOUT_SECS; negative: wait for the connection
	// to fail). A draining worker that keeps sending is never cut.
	OrphanedStreamTimeout time.Duration
	// DisableResponseMux turns off shared response connections
	// (docs/protocol.md §7.8; DYN_TCP_RESPONSE_MUX=0): as a caller, this
	// runtime does not offer them, and as a worker it answers every request
	// with a connection of its own, as the classic protocol does. Peers
	// negotiate per request, so either setting works with any peer.
	DisableResponseMux bool
	// ResponseStreamWindow is the flow-control window of one stream on a
	// shared response connection, in bytes (default 256 KiB,
	// DYN_TCP_RESPONSE_STREAM_WINDOW_BYTES): how far a worker may run ahead
	// of the caller's consumer of that stream.
	ResponseStreamWindow int
	// ResponseMuxIdleTimeout is how long a worker keeps a shared response
	// connection that carries no stream (default 60 s,
	// DYN_TCP_RESPONSE_MUX_IDLE_TIMEOUT_SECS; negative: until shutdown).
	ResponseMuxIdleTimeout time.Duration
	// InhibitDuration is how long an instance that failed a call is skipped
	// (default 5 s, DYN_RUNTIME_INHIBITED_DURATION_SECS; negative: until it
	// re-registers).
	InhibitDuration time.Duration

	// WorkerPoolSize caps concurrent requests per served endpoint (default
	// 1500); more are refused with a ResourceExhausted ack.
	WorkerPoolSize int
	// GracePeriod is how long a served endpoint keeps taking requests after
	// it left discovery at shutdown, so routers that have not yet seen the
	// removal do not hit a closed door (default 5 s,
	// DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS; negative: none).
	GracePeriod time.Duration
	// DrainTimeout bounds how long a served endpoint waits for in-flight
	// requests at shutdown before killing them (default 30 s).
	DrainTimeout time.Duration

	// SystemPort enables the status server (/health, /live, /metrics) when
	// >= 0 (0 = any port); default -1, disabled. Use SystemPortDisabled.
	SystemPort int
	// SystemHost is the status server's bind address (default 0.0.0.0).
	SystemHost string
	// HealthPath and LivePath default to /health and /live.
	HealthPath, LivePath string
	// StartReady makes /health report ready before any endpoint is served
	// (DYN_SYSTEM_STARTING_HEALTH_STATUS=ready).
	StartReady bool
}

// SystemPortDisabled is the SystemPort value that disables the status server.
const SystemPortDisabled = -1

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Discovery == "" {
		c.Discovery = DiscoveryEtcd
	}
	if len(c.EtcdEndpoints) == 0 {
		c.EtcdEndpoints = []string{"http://localhost:2379"}
		if !c.EtcdTLS.IsZero() {
			c.EtcdEndpoints = []string{"https://localhost:2379"}
		}
	}
	def(&c.LeaseTTL, discovery.DefaultTTL)
	def(&c.ConnectTimeout, 120*time.Second)
	if c.RequestPlane == "" {
		c.RequestPlane = PlaneTCP
	}
	if c.NATSServer == "" {
		c.NATSServer = "nats://localhost:4222"
	}
	def(&c.NATSRequestTimeout, 10*time.Second)
	if c.TCPHost == "" {
		c.TCPHost = detectHost()
	}
	if c.ResponseStreamHost == "" {
		c.ResponseStreamHost = c.TCPHost
	}
	def(&c.TCPConnectTimeout, 5*time.Second)
	def(&c.TCPAckTimeout, 5*time.Second)
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = 32 << 20
	}
	def(&c.CallHomeTimeout, 60*time.Second)
	def(&c.OrphanedStreamTimeout, 5*time.Second)
	if c.ResponseStreamWindow == 0 {
		c.ResponseStreamWindow = 256 << 10
	}
	def(&c.ResponseMuxIdleTimeout, 60*time.Second)
	def(&c.InhibitDuration, 5*time.Second)
	if c.WorkerPoolSize == 0 {
		c.WorkerPoolSize = 1500
	}
	def(&c.GracePeriod, 5*time.Second)
	def(&c.DrainTimeout, 30*time.Second)
	if c.SystemHost == "" {
		c.SystemHost = "0.0.0.0"
	}
	if c.HealthPath == "" {
		c.HealthPath = "/health"
	}
	if c.LivePath == "" {
		c.LivePath = "/live"
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch c.Discovery {
	case "", DiscoveryEtcd, DiscoveryFile, DiscoveryMem:
	default:
		return fmt.Errorf("runtime: discovery backend %q: want etcd, file or mem", c.Discovery)
	}
	switch c.RequestPlane {
	case "", PlaneTCP, PlaneNATS:
	default:
		return fmt.Errorf("runtime: request plane %q: want tcp or nats", c.RequestPlane)
	}
	if c.TCPPort < 0 || c.TCPPort > 65535 || c.ResponseStreamPort < 0 || c.ResponseStreamPort > 65535 {
		return fmt.Errorf("runtime: tcp ports must be within 0..65535")
	}
	if c.ResponseStreamWindow < 0 {
		return fmt.Errorf("runtime: response stream window %d: want > 0", c.ResponseStreamWindow)
	}
	if c.SystemPort < SystemPortDisabled || c.SystemPort > 65535 {
		return fmt.Errorf("runtime: system port %d: want -1 (off) or 0..65535", c.SystemPort)
	}
	return c.validateAuth()
}

// TCPBindHost is the address the request-plane listener binds: the
// advertised host when it is loopback, every interface otherwise.
func (c Config) TCPBindHost() string { return bindHost(c.TCPHost) }

// ResponseStreamBindHost is the same for the response stream server.
func (c Config) ResponseStreamBindHost() string { return bindHost(c.ResponseStreamHost) }

func bindHost(advertised string) string {
	if ip := net.ParseIP(advertised); ip != nil && ip.IsLoopback() {
		return advertised
	}
	return ""
}

// detectHost returns the first routable IPv4 address of an interface that
// is up, or 127.0.0.1 when there is none.
func detectHost() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
