// Package runtimeflags turns command-line flags and DYN_* / ETCD_* / NATS_*
// environment variables into a runtime.Config, the same way for every
// binary. It reads the environment only through the lookup function main
// passes in. Flags win over the environment; the environment wins over the
// defaults.
package runtimeflags

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Flags holds the registered flags until Config is called.
type Flags struct {
	env       func(string) string
	discovery *string
	plane     *string
}

// Register adds --discovery-backend and --request-plane to fs, with
// defaults taken from DYN_DISCOVERY_BACKEND and DYN_REQUEST_PLANE.
func Register(fs *flag.FlagSet, env func(string) string) *Flags {
	f := &Flags{env: env}
	f.discovery = fs.String("discovery-backend", or(env("DYN_DISCOVERY_BACKEND"), runtime.DiscoveryEtcd),
		"discovery back-end: etcd, file (one machine, DYN_FILE_KV) or mem (one process) [env DYN_DISCOVERY_BACKEND]")
	f.plane = fs.String("request-plane", or(env("DYN_REQUEST_PLANE"), runtime.PlaneTCP),
		"request plane: tcp or nats [env DYN_REQUEST_PLANE]")
	return f
}

// EnvHelp lists the environment variables Config reads, for --help.
const EnvHelp = `Runtime environment:
  ETCD_ENDPOINTS                      etcd URLs, comma separated (http://localhost:2379)
  ETCD_LEASE_TTL                      lease TTL seconds (10)
  ETCD_STARTUP_CONNECT_TIMEOUT_SECONDS  keep trying etcd/NATS this long (120)
  ETCD_AUTH_USERNAME, ETCD_AUTH_PASSWORD  etcd user and password
  ETCD_AUTH_CA                        CA file (PEM) that verifies etcd's certificate (https:// endpoints)
  ETCD_AUTH_CLIENT_CERT, ETCD_AUTH_CLIENT_KEY  client certificate and key (PEM), for etcd's --client-cert-auth
  NATS_SERVER                         NATS URL (nats://localhost:4222; tls://... for TLS)
  NATS_AUTH_USERNAME, NATS_AUTH_PASSWORD  NATS user and password (set one NATS_AUTH_ method)
  NATS_AUTH_TOKEN                     NATS token
  NATS_AUTH_NKEY                      NATS user nkey seed, or a file holding it
  NATS_AUTH_CREDENTIALS_FILE          NATS user credentials file (JWT and seed)
  NATS_TLS_CA                         CA file (PEM) that verifies the NATS server's certificate
  NATS_TLS_CERT, NATS_TLS_KEY         client certificate and key (PEM), for NATS's tls { verify: true }
  DYN_NATS_REQUEST_TIMEOUT_SECS       NATS request timeout (10)
  DYN_FILE_KV                         file discovery directory ($TMPDIR/dynamo_store_kv)
  DYN_TCP_RPC_HOST, DYN_TCP_RPC_PORT  advertised host / port of the TCP request plane (auto / any)
  DYN_TCP_RESPONSE_STREAM_HOST, DYN_TCP_RESPONSE_STREAM_PORT  same for response streams
  DYN_TCP_CONNECT_TIMEOUT, DYN_TCP_REQUEST_TIMEOUT  seconds (5, 5)
  DYN_TCP_MAX_MESSAGE_SIZE            bytes (33554432)
  DYN_TCP_RESPONSE_MUX                share one response connection per caller among streams (1; 0 = a connection per stream)
  DYN_TCP_RESPONSE_STREAM_WINDOW_BYTES  flow-control window of a stream on a shared response connection (262144)
  DYN_TCP_RESPONSE_MUX_IDLE_TIMEOUT_SECS  close a shared response connection idle this long (60)
  DYN_TCP_WORKER_POOL_SIZE            concurrent requests per endpoint (1500)
  DYN_RUNTIME_INHIBITED_DURATION_SECS skip a failed instance this long (5; 0 = until it re-registers)
  DYN_ORPHANED_STREAM_TIMEOUT_SECS    a stream whose worker left discovery may stay silent this long (5; 0 = no bound)
  DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS  keep taking requests this long after unregistering (5)
  DYN_RUNTIME_GRACEFUL_SHUTDOWN_TIMEOUT_SECS  drain bound at shutdown (30)
  DYN_SYSTEM_PORT, DYN_SYSTEM_HOST    status server (/health /live /metrics): port (-1 = off), bind (0.0.0.0)
  DYN_SYSTEM_HEALTH_PATH, DYN_SYSTEM_LIVE_PATH, DYN_SYSTEM_STARTING_HEALTH_STATUS (notready)
`

// Config builds the runtime configuration. It reports every bad value.
func (f *Flags) Config() (runtime.Config, error) {
	p := parser{env: f.env}
	cfg := runtime.Config{
		Discovery:              *f.discovery,
		RequestPlane:           *f.plane,
		EtcdUsername:           f.env("ETCD_AUTH_USERNAME"),
		EtcdPassword:           f.env("ETCD_AUTH_PASSWORD"),
		LeaseTTL:               p.seconds("ETCD_LEASE_TTL"),
		ConnectTimeout:         p.seconds("ETCD_STARTUP_CONNECT_TIMEOUT_SECONDS"),
		FileDir:                f.env("DYN_FILE_KV"),
		NATSServer:             f.env("NATS_SERVER"),
		NATSRequestTimeout:     p.seconds("DYN_NATS_REQUEST_TIMEOUT_SECS"),
		TCPHost:                f.env("DYN_TCP_RPC_HOST"),
		TCPPort:                p.int("DYN_TCP_RPC_PORT", 0),
		ResponseStreamHost:     f.env("DYN_TCP_RESPONSE_STREAM_HOST"),
		ResponseStreamPort:     p.int("DYN_TCP_RESPONSE_STREAM_PORT", 0),
		TCPConnectTimeout:      p.seconds("DYN_TCP_CONNECT_TIMEOUT"),
		TCPAckTimeout:          p.seconds("DYN_TCP_REQUEST_TIMEOUT"),
		MaxMessageSize:         p.int("DYN_TCP_MAX_MESSAGE_SIZE", 0),
		DisableResponseMux:     !p.bool("DYN_TCP_RESPONSE_MUX", true),
		ResponseStreamWindow:   p.int("DYN_TCP_RESPONSE_STREAM_WINDOW_BYTES", 0),
		ResponseMuxIdleTimeout: p.seconds("DYN_TCP_RESPONSE_MUX_IDLE_TIMEOUT_SECS"),
		WorkerPoolSize:         p.int("DYN_TCP_WORKER_POOL_SIZE", 0),
		DrainTimeout:           p.seconds("DYN_RUNTIME_GRACEFUL_SHUTDOWN_TIMEOUT_SECS"),
		SystemPort:             p.int("DYN_SYSTEM_PORT", runtime.SystemPortDisabled),
		SystemHost:             f.env("DYN_SYSTEM_HOST"),
		HealthPath:             f.env("DYN_SYSTEM_HEALTH_PATH"),
		LivePath:               f.env("DYN_SYSTEM_LIVE_PATH"),
		StartReady:             f.env("DYN_SYSTEM_STARTING_HEALTH_STATUS") == "ready",
	}
	cfg.EtcdTLS = runtime.TLSFiles{
		CAFile:   f.env("ETCD_AUTH_CA"),
		CertFile: f.env("ETCD_AUTH_CLIENT_CERT"),
		KeyFile:  f.env("ETCD_AUTH_CLIENT_KEY"),
	}
	cfg.NATSAuth = runtime.NATSAuth{
		Username:        f.env("NATS_AUTH_USERNAME"),
		Password:        f.env("NATS_AUTH_PASSWORD"),
		Token:           f.env("NATS_AUTH_TOKEN"),
		NKey:            f.env("NATS_AUTH_NKEY"),
		CredentialsFile: f.env("NATS_AUTH_CREDENTIALS_FILE"),
	}
	cfg.NATSTLS = runtime.TLSFiles{
		CAFile:   f.env("NATS_TLS_CA"),
		CertFile: f.env("NATS_TLS_CERT"),
		KeyFile:  f.env("NATS_TLS_KEY"),
	}
	if v := f.env("DYN_ORPHANED_STREAM_TIMEOUT_SECS"); v != "" {
		if cfg.OrphanedStreamTimeout = p.seconds("DYN_ORPHANED_STREAM_TIMEOUT_SECS"); cfg.OrphanedStreamTimeout == 0 {
			cfg.OrphanedStreamTimeout = -1 // 0 means "no bound"
		}
	}
	if v := f.env("DYN_RUNTIME_INHIBITED_DURATION_SECS"); v != "" {
		if d := p.seconds("DYN_RUNTIME_INHIBITED_DURATION_SECS"); d == 0 {
			cfg.InhibitDuration = -1 // 0 means "never re-admit"
		} else {
			cfg.InhibitDuration = d
		}
	}
	if f.env("DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS") != "" {
		if cfg.GracePeriod = p.seconds("DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS"); cfg.GracePeriod == 0 {
			cfg.GracePeriod = -1 // 0 means "no grace period"
		}
	}
	if e := f.env("ETCD_ENDPOINTS"); e != "" {
		for _, u := range strings.Split(e, ",") {
			if u = strings.TrimSpace(u); u != "" {
				cfg.EtcdEndpoints = append(cfg.EtcdEndpoints, u)
			}
		}
	}
	if len(p.errs) > 0 {
		return cfg, fmt.Errorf("%s", strings.Join(p.errs, "; "))
	}
	return cfg, cfg.Validate()
}

type parser struct {
	env  func(string) string
	errs []string
}

func (p *parser) int(name string, def int) int {
	v := p.env(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Sprintf("%s=%q: want an integer", name, v))
		return def
	}
	return n
}

func (p *parser) bool(name string, def bool) bool {
	v := p.env(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Sprintf("%s=%q: want 1 or 0", name, v))
		return def
	}
	return b
}

// seconds reads a number of seconds ("2", "0.5") or a Go duration ("500ms").
func (p *parser) seconds(name string) time.Duration {
	v := p.env(name)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d
	}
	p.errs = append(p.errs, fmt.Sprintf("%s=%q: want seconds", name, v))
	return 0
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
