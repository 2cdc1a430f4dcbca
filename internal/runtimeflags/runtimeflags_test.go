package runtimeflags

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func parse(t *testing.T, env map[string]string, args ...string) (runtime.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := Register(fs, func(k string) string { return env[k] })
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Config()
}

func TestEnvAndFlags(t *testing.T) {
	cfg, err := parse(t, map[string]string{
		"DYN_DISCOVERY_BACKEND": "file", "DYN_REQUEST_PLANE": "nats",
		"ETCD_ENDPOINTS": "http://a:2379, http://b:2379", "DYN_TCP_CONNECT_TIMEOUT": "1.5",
		"DYN_RUNTIME_INHIBITED_DURATION_SECS": "0", "DYN_SYSTEM_PORT": "9090",
		"DYN_ORPHANED_STREAM_TIMEOUT_SECS": "2.5",
	}, "--request-plane", "tcp")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Discovery != "file" || cfg.RequestPlane != "tcp" {
		t.Errorf("selectors = %s/%s: env sets the default, the flag wins", cfg.Discovery, cfg.RequestPlane)
	}
	if len(cfg.EtcdEndpoints) != 2 || cfg.EtcdEndpoints[1] != "http://b:2379" {
		t.Errorf("etcd endpoints = %q", cfg.EtcdEndpoints)
	}
	if cfg.TCPConnectTimeout != 1500*time.Millisecond || cfg.InhibitDuration >= 0 || cfg.SystemPort != 9090 || cfg.OrphanedStreamTimeout != 2500*time.Millisecond {
		t.Errorf("cfg = %+v", cfg)
	}
}

func TestOrphanedStreamTimeoutZeroMeansNoBound(t *testing.T) {
	cfg, err := parse(t, map[string]string{"DYN_ORPHANED_STREAM_TIMEOUT_SECS": "0"})
	if err != nil || cfg.OrphanedStreamTimeout >= 0 {
		t.Fatalf("DYN_ORPHANED_STREAM_TIMEOUT_SECS=0: timeout %v, %v; want negative (no bound)", cfg.OrphanedStreamTimeout, err)
	}
}

func TestResponseMuxVariables(t *testing.T) {
	cfg, err := parse(t, nil)
	if err != nil || cfg.DisableResponseMux {
		t.Fatalf("default: DisableResponseMux %v, %v; want response mux on", cfg.DisableResponseMux, err)
	}
	cfg, err = parse(t, map[string]string{
		"DYN_TCP_RESPONSE_MUX": "0", "DYN_TCP_RESPONSE_STREAM_WINDOW_BYTES": "65536",
		"DYN_TCP_RESPONSE_MUX_IDLE_TIMEOUT_SECS": "5",
	})
	if err != nil || !cfg.DisableResponseMux || cfg.ResponseStreamWindow != 65536 || cfg.ResponseMuxIdleTimeout != 5*time.Second {
		t.Fatalf("cfg = %+v, %v", cfg, err)
	}
	if cfg, err := parse(t, map[string]string{"DYN_TCP_RESPONSE_MUX": "1"}); err != nil || cfg.DisableResponseMux {
		t.Fatalf("DYN_TCP_RESPONSE_MUX=1: DisableResponseMux %v, %v", cfg.DisableResponseMux, err)
	}
	if _, err := parse(t, map[string]string{"DYN_TCP_RESPONSE_MUX": "maybe"}); err == nil || !strings.Contains(err.Error(), "DYN_TCP_RESPONSE_MUX") {
		t.Fatalf("DYN_TCP_RESPONSE_MUX=maybe: err = %v", err)
	}
}

func TestBadValuesAreReportedTogether(t *testing.T) {
	_, err := parse(t, map[string]string{"DYN_SYSTEM_PORT": "x", "DYN_TCP_REQUEST_TIMEOUT": "soon"})
	if err == nil || !strings.Contains(err.Error(), "DYN_SYSTEM_PORT") || !strings.Contains(err.Error(), "DYN_TCP_REQUEST_TIMEOUT") {
		t.Fatalf("err = %v", err)
	}
	if _, err := parse(t, nil, "--discovery-backend", "zookeeper"); err == nil {
		t.Fatal("an unknown discovery backend must be refused")
	}
}

func TestAuthAndTLSVariables(t *testing.T) {
	env := map[string]string{
		"ETCD_ENDPOINTS":     "https://etcd:2379",
		"ETCD_AUTH_USERNAME": "dynamo", "ETCD_AUTH_PASSWORD": "etcd-pw",
		"ETCD_AUTH_CA": "/tls/ca.pem", "ETCD_AUTH_CLIENT_CERT": "/tls/etcd.pem", "ETCD_AUTH_CLIENT_KEY": "/tls/etcd-key.pem",
		"NATS_SERVER":                "tls://nats:4222",
		"NATS_AUTH_CREDENTIALS_FILE": "/tls/user.creds",
		"NATS_TLS_CA":                "/tls/ca.pem", "NATS_TLS_CERT": "/tls/nats.pem", "NATS_TLS_KEY": "/tls/nats-key.pem",
	}
	cfg, err := parse(t, env)
	if err != nil {
		t.Fatal(err)
	}
	type auth struct {
		user, password   string
		etcdTLS, natsTLS runtime.TLSFiles
		nats             runtime.NATSAuth
	}
	want := auth{
		user: "dynamo", password: "etcd-pw",
		etcdTLS: runtime.TLSFiles{CAFile: "/tls/ca.pem", CertFile: "/tls/etcd.pem", KeyFile: "/tls/etcd-key.pem"},
		natsTLS: runtime.TLSFiles{CAFile: "/tls/ca.pem", CertFile: "/tls/nats.pem", KeyFile: "/tls/nats-key.pem"},
		nats:    runtime.NATSAuth{CredentialsFile: "/tls/user.creds"},
	}
	if got := (auth{cfg.EtcdUsername, cfg.EtcdPassword, cfg.EtcdTLS, cfg.NATSTLS, cfg.NATSAuth}); got != want {
		t.Errorf("auth settings = %+v, want %+v", got, want)
	}
	for name, a := range map[string]runtime.NATSAuth{
		"NATS_AUTH_USERNAME": {Username: "u", Password: "p"},
		"NATS_AUTH_TOKEN":    {Token: "t"},
		"NATS_AUTH_NKEY":     {NKey: "/tls/user.nk"},
	} {
		env := map[string]string{name: a.Username + a.Token + a.NKey, "NATS_AUTH_PASSWORD": a.Password}
		if a.Password == "" {
			delete(env, "NATS_AUTH_PASSWORD")
		}
		cfg, err := parse(t, env)
		if err != nil || cfg.NATSAuth != a {
			t.Errorf("%s: NATSAuth = %+v, %v; want %+v", name, cfg.NATSAuth, err, a)
		}
	}
}

func TestInconsistentAuthIsRefused(t *testing.T) {
	_, err := parse(t, map[string]string{
		"ETCD_AUTH_CLIENT_CERT": "/tls/etcd.pem",
		"NATS_AUTH_TOKEN":       "t", "NATS_AUTH_CREDENTIALS_FILE": "/tls/user.creds",
	})
	if err == nil || !strings.Contains(err.Error(), "ETCD_AUTH_CLIENT_KEY") || !strings.Contains(err.Error(), "only one authentication method") {
		t.Fatalf("err = %v", err)
	}
}
