package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/frontend"
)

func TestFlagsAndEnv(t *testing.T) {
	env := map[string]string{"DYN_HTTP_PORT": "9001", "DYN_MIGRATION_LIMIT": "3", "DYN_HTTP_BODY_LIMIT_MB": "2",
		"DYN_METRICS_TTFT_COUNT": "4", "DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS": "0"}
	s, err := parse(env, "--router-mode", "random", "--metrics-prefix", "my-prefix")
	if err != nil {
		t.Fatal(err)
	}
	if s.addr != "0.0.0.0:9001" || s.models.RouterMode != "random" || s.models.MigrationLimit == nil || *s.models.MigrationLimit != 3 || s.http.BodyLimit != 2<<20 {
		t.Errorf("addr %s models %+v http %+v", s.addr, s.models, s.http)
	}
	if s.metrics.Prefix != "my_prefix" || s.models.MetricsPrefix != "my_prefix" || s.metrics.Buckets[frontend.HistogramTTFT].Count != 4 || s.http.ShutdownGrace >= 0 {
		t.Errorf("metrics %+v, models' prefix %q, grace %v", s.metrics, s.models.MetricsPrefix, s.http.ShutdownGrace)
	}
	s, _ = parse(map[string]string{"DYN_HTTP_PORT": "9001"}, "--http-port", "8123")
	if s.addr != "0.0.0.0:8123" || s.models.MigrationLimit != nil {
		t.Errorf("a flag must beat its env variable, and an unset migration limit must defer to the cards: %s %+v", s.addr, s.models.MigrationLimit)
	}
}

func TestKVFlags(t *testing.T) {
	s, err := parse(map[string]string{"DYN_ROUTER_TEMPERATURE": "0.5"},
		"--router-mode", "kv", "--kv-overlap-score-weight", "0", "--no-kv-events", "--router-ttl-secs", "30", "--no-track-active-blocks")
	if err != nil {
		t.Fatal(err)
	}
	kv := s.models.KV
	if s.models.RouterMode != "kv" || kv.OverlapScoreWeight == nil || *kv.OverlapScoreWeight != 0 || kv.Temperature != 0.5 ||
		!kv.NoEvents || kv.TTL != 30*time.Second || !kv.NoTrackActiveBlocks || kv.ReplicaSync {
		t.Errorf("kv config %+v (weight %v)", kv, kv.OverlapScoreWeight)
	}
	s, _ = parse(nil)
	if s.models.KV.OverlapScoreWeight != nil || s.models.KV.NoEvents || s.models.KV.NoTrackActiveBlocks {
		t.Errorf("defaults: %+v", s.models.KV)
	}
	s, _ = parse(map[string]string{"DYN_OVERLAP_SCORE_WEIGHT": "2", "DYN_ROUTER_USE_KV_EVENTS": "off"})
	if w := s.models.KV.OverlapScoreWeight; w == nil || *w != 2 || !s.models.KV.NoEvents {
		t.Errorf("from the environment: weight %v, no events %v", w, s.models.KV.NoEvents)
	}
}

func TestBadValuesExit2WithAClearMessage(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--http-port", "x"}, nil, "invalid value"},
		{[]string{"--http-port", "70000"}, nil, "out of range"},
		{[]string{"--router-mode", "bogus"}, nil, "round-robin, random or kv"},
		{[]string{"--router-temperature", "-1"}, nil, "must not be negative"},
		{nil, map[string]string{"DYN_KV_EVENTS": "maybe"}, "DYN_KV_EVENTS"},
		{[]string{"--tls-cert-path", "/nonexistent.pem"}, nil, "must be given together"},
		{[]string{"--migration-limit", "-1"}, nil, "out of range"},
		{nil, map[string]string{"DYN_HTTP_BODY_LIMIT_MB": "lots"}, "DYN_HTTP_BODY_LIMIT_MB"},
		{nil, map[string]string{"DYN_HTTP_PORT": "eighty"}, "DYN_HTTP_PORT"},
		{nil, map[string]string{"DYN_METRICS_ITL_MAX": "2s"}, "DYN_METRICS_ITL_MAX"},
		{nil, map[string]string{"DYN_DISCOVERY_BACKEND": "zookeeper"}, "zookeeper"},
		{[]string{"extra"}, nil, "unexpected arguments"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		code := run(c.args, func(k string) string { return c.env[k] }, &out, nil)
		if code != 2 || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v %v: exit %d, output %q; want 2 and %q", c.args, c.env, code, out.String(), c.want)
		}
	}
}

func TestHelpListsFlagsAndEnv(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"--help"}, func(string) string { return "" }, &out, nil); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"-http-port", "(default 8000)", "-router-mode", "-migration-limit", "-discovery-backend", "DYN_HTTP_BODY_LIMIT_MB", "ETCD_ENDPOINTS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// parse registers the frontend's flags, parses args and returns the
// settings.
func parse(env map[string]string, args ...string) (settings, error) {
	fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lookup := func(k string) string { return env[k] }
	f := register(envflag.New(fs, lookup))
	if err := fs.Parse(args); err != nil {
		return settings{}, err
	}
	return f.settings(lookup)
}
