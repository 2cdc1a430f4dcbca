package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestFlagsAndEnv(t *testing.T) {
	env := map[string]string{"DYN_HTTP_PORT": "9001", "DYN_MIGRATION_LIMIT": "3", "DYN_HTTP_BODY_LIMIT_MB": "2"}
	fs, f := newFlags(env)
	if err := fs.Parse([]string{"--router-mode", "random"}); err != nil {
		t.Fatal(err)
	}
	cfg, addr, _, _, err := f.config(visited(fs))
	if err != nil {
		t.Fatal(err)
	}
	if addr != "0.0.0.0:9001" || cfg.RouterMode != "random" || cfg.MigrationLimit == nil || *cfg.MigrationLimit != 3 || cfg.BodyLimit != 2<<20 {
		t.Errorf("addr %s cfg %+v", addr, cfg)
	}
	fs, f = newFlags(map[string]string{"DYN_HTTP_PORT": "9001"})
	_ = fs.Parse([]string{"--http-port", "8123"})
	cfg, addr, _, _, _ = f.config(visited(fs))
	if addr != "0.0.0.0:8123" || cfg.MigrationLimit != nil {
		t.Errorf("a flag must beat its env variable, and an unset migration limit must defer to the cards: %s %+v", addr, cfg.MigrationLimit)
	}
}

func TestKVFlags(t *testing.T) {
	fs, f := newFlags(map[string]string{"DYN_ROUTER_TEMPERATURE": "0.5"})
	if err := fs.Parse([]string{"--router-mode", "kv", "--kv-overlap-score-weight", "0", "--no-kv-events", "--router-ttl-secs", "30", "--no-track-active-blocks"}); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, _, err := f.config(visited(fs))
	if err != nil {
		t.Fatal(err)
	}
	kv := cfg.KV
	if cfg.RouterMode != "kv" || kv.OverlapScoreWeight == nil || *kv.OverlapScoreWeight != 0 || kv.Temperature != 0.5 ||
		!kv.NoEvents || kv.TTL != 30*time.Second || !kv.NoTrackActiveBlocks || kv.ReplicaSync {
		t.Errorf("kv config %+v (weight %v)", kv, kv.OverlapScoreWeight)
	}
	fs, f = newFlags(nil)
	_ = fs.Parse(nil)
	cfg, _, _, _, _ = f.config(visited(fs))
	if cfg.KV.OverlapScoreWeight != nil || cfg.KV.NoEvents || cfg.KV.NoTrackActiveBlocks {
		t.Errorf("defaults: %+v", cfg.KV)
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

func newFlags(env map[string]string) (*flag.FlagSet, *flags) {
	fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, register(fs, func(k string) string { return env[k] })
}

func visited(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
