package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/frontend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
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

func TestAccessLogFlag(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		want bool
	}{
		{nil, nil, false},
		{nil, []string{"--access-log"}, true},
		{map[string]string{"DYN_HTTP_ACCESS_LOG": "1"}, nil, true},
		{map[string]string{"DYN_HTTP_ACCESS_LOG": "true"}, []string{"--access-log=false"}, false},
	} {
		s, err := parse(c.env, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if s.http.AccessLog != c.want {
			t.Errorf("env %v args %v: access log %v, want %v", c.env, c.args, s.http.AccessLog, c.want)
		}
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

func TestDisaggFlags(t *testing.T) {
	s, err := parse(map[string]string{"DYN_ENFORCE_DISAGG": "true", "DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_RATIO_THRESHOLD": "0.5"},
		"--router-conditional-disagg", "--router-conditional-disagg-eff-isl-threshold", "1024")
	if err != nil {
		t.Fatal(err)
	}
	c := s.models.ConditionalDisagg
	if !s.models.EnforceDisagg || !c.Enabled || c.EffISLThreshold != 1024 || c.EffISLRatioThreshold != 0.5 {
		t.Errorf("enforce %v, conditional %+v", s.models.EnforceDisagg, c)
	}
	s, _ = parse(nil)
	c = s.models.ConditionalDisagg
	if s.models.EnforceDisagg || c.Enabled || c.EffISLThreshold != 2048 || c.EffISLRatioThreshold != 0.7 {
		t.Errorf("defaults: enforce %v, conditional %+v; want off, 2048, 0.7", s.models.EnforceDisagg, c)
	}
}

func TestBadValuesExit2WithAClearMessage(t *testing.T) {
	emptyKeyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(emptyKeyFile, []byte("# no keys yet\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--http-port", "x"}, nil, "invalid value"},
		{[]string{"--http-port", "70000"}, nil, "out of range"},
		{[]string{"--router-mode", "bogus"}, nil, "round-robin, random, least-loaded or kv"},
		{[]string{"--router-temperature", "-1"}, nil, "must not be negative"},
		{nil, map[string]string{"DYN_KV_EVENTS": "maybe"}, "DYN_KV_EVENTS"},
		{[]string{"--tls-cert-path", "/nonexistent.pem"}, nil, "must be given together"},
		{[]string{"--migration-limit", "-1"}, nil, "out of range"},
		{[]string{"--router-conditional-disagg-eff-isl-ratio-threshold", "1.5"}, nil, "want a fraction"},
		{[]string{"--router-conditional-disagg-eff-isl-threshold", "0"}, nil, "must be positive"},
		{nil, map[string]string{"DYN_HTTP_BODY_LIMIT_MB": "lots"}, "DYN_HTTP_BODY_LIMIT_MB"},
		{nil, map[string]string{"DYN_GC_MIN_HEAP_MIB": "64MiB"}, `DYN_GC_MIN_HEAP_MIB="64MiB": want a whole number of MiB`},
		{nil, map[string]string{"DYN_HTTP_PORT": "eighty"}, "DYN_HTTP_PORT"},
		{nil, map[string]string{"DYN_METRICS_ITL_MAX": "2s"}, "DYN_METRICS_ITL_MAX"},
		{nil, map[string]string{"DYN_DISCOVERY_BACKEND": "zookeeper"}, "zookeeper"},
		{[]string{"extra"}, nil, "unexpected arguments"},
		{[]string{"--api-key-file", emptyKeyFile}, nil, "no keys in the file"},
		{[]string{"--api-key-file", "/nonexistent/keys"}, nil, "--api-key-file: open /nonexistent/keys"},
		{[]string{"--api-key", ""}, nil, "no key in the value"},
		{nil, map[string]string{"DYN_API_KEYS": " , "}, "DYN_API_KEYS: no key in the value"},
		{[]string{"--api-key", "k", "--api-key-exempt-paths", "health"}, nil, "must start with /"},
		{[]string{"--cors-allowed-origins", "app.example.com"}, nil, `CORS origin "app.example.com"`},
		{nil, map[string]string{"DYN_CORS_ALLOWED_ORIGINS": "https://app.example.com/ui"}, "without a path"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		code := run(c.args, func(k string) string { return c.env[k] }, &out, nil)
		if code != 2 || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v %v: exit %d, output %q; want 2 and %q", c.args, c.env, code, out.String(), c.want)
		}
	}
}

// An unknown flag prints two lines (the reason, and where the flags are
// listed), not the whole usage.
func TestUnknownFlagPrintsOneLineAndPointsToHelp(t *testing.T) {
	var out bytes.Buffer
	code := run([]string{"--foo"}, func(string) string { return "" }, &out, nil)
	want := "frontend: flag provided but not defined: -foo\nrun 'frontend --help' for the flags\n"
	if code != 2 || out.String() != want {
		t.Errorf("exit %d, output %q; want 2 and %q", code, out.String(), want)
	}
}

func TestHelpListsFlagsAndEnv(t *testing.T) {
	var out bytes.Buffer
	env := map[string]string{"DYN_API_KEYS": "sk-from-env"}
	if code := run([]string{"--help"}, func(k string) string { return env[k] }, &out, nil); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"-http-port", "(default 8000)", "-router-mode", "-migration-limit", "-discovery-backend", "DYN_HTTP_BODY_LIMIT_MB", "ETCD_ENDPOINTS",
		"-api-key", "DYN_API_KEYS", "-api-key-file", "DYN_API_KEY_FILE", "-api-key-exempt-paths", "/health,/live,/metrics", "-cors-allowed-origins", "DYN_CORS_ALLOWED_ORIGINS",
		"-enforce-disagg", "DYN_ENFORCE_DISAGG", "-access-log", "DYN_HTTP_ACCESS_LOG", "-router-conditional-disagg", "DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_THRESHOLD"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "sk-from-env") {
		t.Error("--help shows the key of DYN_API_KEYS")
	}
}

func TestAccessControlFlags(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("# the team's keys\r\nsk-file-1\r\n\n  sk-file-2  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.http.APIKeys) != 0 || len(s.http.CORSAllowedOrigins) != 0 || strings.Join(s.http.AuthExemptPaths, ",") != "/health,/live,/metrics" {
		t.Errorf("defaults: keys %q, origins %q, exempt %q", s.http.APIKeys, s.http.CORSAllowedOrigins, s.http.AuthExemptPaths)
	}
	cases := []struct {
		env                   map[string]string
		args                  []string
		keys, exempt, origins string
	}{
		{map[string]string{"DYN_API_KEYS": "sk-env-1, sk-env-2"}, nil, "sk-env-1 sk-env-2", "/health /live /metrics", ""},
		{map[string]string{"DYN_API_KEYS": "sk-env"}, []string{"--api-key", "sk-a,sk-b", "--api-key", "sk-c"}, "sk-a sk-b sk-c", "/health /live /metrics", ""},
		{nil, []string{"--api-key", "sk-a", "--api-key-file", keyFile}, "sk-a sk-file-1 sk-file-2", "/health /live /metrics", ""},
		{map[string]string{"DYN_API_KEY_FILE": keyFile, "DYN_API_KEY_EXEMPT_PATHS": "/live"}, nil, "sk-file-1 sk-file-2", "/live", ""},
		{map[string]string{"DYN_API_KEY_EXEMPT_PATHS": "none"}, []string{"--api-key", "k"}, "k", "", ""},
		{nil, []string{"--api-key", "k", "--api-key-exempt-paths="}, "k", "", ""},
		{map[string]string{"DYN_CORS_ALLOWED_ORIGINS": "https://app.example.com,http://localhost:3000"}, nil, "", "/health /live /metrics", "https://app.example.com http://localhost:3000"},
		{nil, []string{"--cors-allowed-origins", "*"}, "", "/health /live /metrics", "*"},
	}
	for _, c := range cases {
		s, err := parse(c.env, c.args...)
		if err != nil {
			t.Errorf("%v %v: %v", c.env, c.args, err)
			continue
		}
		h := s.http
		if strings.Join(h.APIKeys, " ") != c.keys || strings.Join(h.AuthExemptPaths, " ") != c.exempt || h.AuthExemptPaths == nil ||
			strings.Join(h.CORSAllowedOrigins, " ") != c.origins {
			t.Errorf("%v %v: keys %q, exempt %q, origins %q", c.env, c.args, h.APIKeys, h.AuthExemptPaths, h.CORSAllowedOrigins)
		}
	}
}

// TestKeysFromAFileGuardTheServedAPI runs the frontend as main wires it,
// with its keys in a file and CORS from the environment, over real HTTP.
func TestKeysFromAFileGuardTheServedAPI(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("sk-mounted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := parse(map[string]string{"DYN_API_KEY_FILE": keyFile, "DYN_CORS_ALLOWED_ORIGINS": "https://app.example.com", "DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS": "0"},
		"--http-host", "127.0.0.1", "--http-port", "0")
	if err != nil {
		t.Fatal(err)
	}
	rcfg := runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: -1}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- serve(ctx, s, rcfg, "", slog.New(slog.DiscardHandler), nil, ready) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	get := func(path string, h http.Header) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, "http://"+url+path, nil)
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	key := http.Header{"Authorization": {"Bearer sk-mounted"}}
	for _, c := range []struct {
		path   string
		h      http.Header
		status int
	}{
		{"/v1/models", key, 200},
		{"/v1/models", nil, 401},
		{"/v1/models", http.Header{"Authorization": {"Bearer sk-other"}}, 401},
		{"/live", nil, 200},
		{"/metrics", nil, 200},
	} {
		if resp := get(c.path, c.h); resp.StatusCode != c.status {
			t.Errorf("%s %v: %d, want %d", c.path, c.h, resp.StatusCode, c.status)
		}
	}
	resp := get("/v1/models", http.Header{"Authorization": {"Bearer sk-mounted"}, "Origin": {"https://app.example.com"}})
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("CORS from DYN_CORS_ALLOWED_ORIGINS: %v", resp.Header)
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

func TestQueueFlags(t *testing.T) {
	s, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if q := s.models.Queue; q == nil || q.Max != 1024 || q.Timeout != 30*time.Second || q.Policy != "fcfs" || q.WorkerLimit != 0 || q.Threshold != nil {
		t.Errorf("defaults: %+v", q)
	}
	s, err = parse(map[string]string{"DYN_ROUTER_QUEUE_TIMEOUT": "2.5", "DYN_ROUTER_QUEUE_THRESHOLD": "4"},
		"--router-queue-max", "0", "--router-queue-worker-limit", "4", "--router-queue-policy", "wspt")
	if q := s.models.Queue; err != nil || q.Max != 0 || q.Timeout != 2500*time.Millisecond || q.WorkerLimit != 4 || q.Policy != "wspt" || q.Threshold == nil || *q.Threshold != 4 {
		t.Errorf("%v: %+v", err, q)
	}
	for _, policy := range []string{"fcfs", "lcfs", "wspt"} {
		if s, err := parse(nil, "--router-queue-policy", policy); err != nil || s.models.Queue.Policy != policy {
			t.Errorf("--router-queue-policy %s: %v", policy, err)
		}
	}
	if s, err := parse(nil, "--router-queue-threshold", "0"); err != nil || s.models.Queue.Threshold != nil {
		t.Errorf("--router-queue-threshold 0 (off): %v, %+v", err, s.models.Queue)
	}
	for _, args := range [][]string{{"--router-queue-max", "-1"}, {"--router-queue-timeout", "0"}, {"--router-queue-policy", "sjf"},
		{"--router-queue-worker-limit", "-2"}, {"--router-queue-threshold", "-1"}} {
		if _, err := parse(nil, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

func TestConversationCacheFlag(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		want int64
	}{
		{nil, nil, 64 << 20},
		{nil, []string{"--conversation-cache-mib", "0"}, 0},
		{map[string]string{"DYN_CONVERSATION_CACHE_MIB": "256"}, nil, 256 << 20},
	} {
		s, err := parse(c.env, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if s.models.ConversationCacheBytes != c.want {
			t.Errorf("env %v args %v: %d bytes, want %d", c.env, c.args, s.models.ConversationCacheBytes, c.want)
		}
	}
	if _, err := parse(nil, "--conversation-cache-mib", "-1"); err == nil || !strings.Contains(err.Error(), "--conversation-cache-mib") {
		t.Errorf("a negative size: %v", err)
	}
}

func TestResponsesFlags(t *testing.T) {
	parse := func(env map[string]string, args ...string) (responsesSettings, error) {
		fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
		getenv := func(k string) string { return env[k] }
		f := register(envflag.New(fs, getenv))
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.responsesConfig(getenv)
	}
	c, err := parse(map[string]string{"HOME": "/home/u"})
	if err != nil || c.kind != "file" || c.ttl != 30*24*time.Hour || c.dir != "/home/u/.local/state/dynamo/responses" || c.bucket != "dynamo_responses" || c.replicas != 1 {
		t.Errorf("defaults: %+v %v", c, err)
	}
	c, err = parse(map[string]string{"XDG_STATE_HOME": "/state", "DYN_RESPONSES_STORE": "nats", "DYN_RESPONSES_TTL": "2d"})
	if err != nil || c.kind != "nats" || c.ttl != 48*time.Hour || c.dir != "/state/dynamo/responses" {
		t.Errorf("from the environment: %+v %v", c, err)
	}
	c, err = parse(nil, "--responses-store", "none", "--responses-ttl", "90m", "--responses-data-dir", "/d")
	if err != nil || c.kind != "none" || c.ttl != 90*time.Minute || c.dir != "/d" {
		t.Errorf("flags: %+v %v", c, err)
	}
	for _, args := range [][]string{
		{"--responses-store", "redis"},
		{"--responses-ttl", "0"},
		{"--responses-ttl", "soon"},
		{"--responses-nats-replicas", "0"},
	} {
		if _, err := parse(nil, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
