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
	if cfg.TCPConnectTimeout != 1500*time.Millisecond || cfg.InhibitDuration >= 0 || cfg.SystemPort != 9090 {
		t.Errorf("cfg = %+v", cfg)
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
