package workerflags

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend/worker"
)

func configs(t *testing.T, env map[string]string) (worker.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := Register(fs, func(k string) string { return env[k] })
	if err := fs.Parse([]string{"--model-path", "org/model"}); err != nil {
		t.Fatal(err)
	}
	w, _, err := f.Configs()
	return w, err
}

func TestHealthCheckVariables(t *testing.T) {
	w, err := configs(t, nil)
	if err != nil || w.Canary != (worker.CanaryConfig{}) {
		t.Fatalf("without variables: %+v, %v; want health checks off, defaults left to the worker", w.Canary, err)
	}

	file := filepath.Join(t.TempDir(), "canary.json")
	if err := os.WriteFile(file, []byte(`{"token_ids": [9], "stop_conditions": {"max_tokens": 1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{`{"token_ids": [9], "stop_conditions": {"max_tokens": 1}}`, "@" + file} {
		w, err = configs(t, map[string]string{
			"DYN_HEALTH_CHECK_ENABLED": "true", "DYN_CANARY_WAIT_TIME": "2.5",
			"DYN_HEALTH_CHECK_REQUEST_TIMEOUT": "500ms", "DYN_HEALTH_CHECK_PAYLOAD": payload, "DYN_HEALTH_CHECK_PROBE_INTERVAL": "0.25",
		})
		if err != nil {
			t.Fatalf("payload %s: %v", payload, err)
		}
		c := w.Canary
		if !c.Enabled || c.WaitTime != 2500*time.Millisecond || c.RequestTimeout != 500*time.Millisecond || c.ProbeInterval != 250*time.Millisecond {
			t.Errorf("canary config %+v", c)
		}
		if c.Payload == nil || !slices.Equal(c.Payload.TokenIDs, []uint32{9}) || c.Payload.MaxTokens(0) != 1 {
			t.Errorf("payload %s gave %+v", payload, c.Payload)
		}
	}
}

func TestBadHealthCheckVariablesAreReportedTogether(t *testing.T) {
	_, err := configs(t, map[string]string{
		"DYN_HEALTH_CHECK_ENABLED": "maybe", "DYN_CANARY_WAIT_TIME": "-1",
		"DYN_HEALTH_CHECK_REQUEST_TIMEOUT": "soon", "DYN_HEALTH_CHECK_PAYLOAD": `{"prompt": "1"}`, "DYN_HEALTH_CHECK_PROBE_INTERVAL": "often",
	})
	for _, want := range []string{"DYN_HEALTH_CHECK_ENABLED", "DYN_CANARY_WAIT_TIME", "DYN_HEALTH_CHECK_REQUEST_TIMEOUT", "no token_ids", "DYN_HEALTH_CHECK_PROBE_INTERVAL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
	_, err = configs(t, map[string]string{"DYN_HEALTH_CHECK_PAYLOAD": "@/nonexistent/canary.json"})
	if err == nil || !strings.Contains(err.Error(), "DYN_HEALTH_CHECK_PAYLOAD") {
		t.Errorf("a missing payload file: %v", err)
	}
}

func TestDisaggregationMode(t *testing.T) {
	parse := func(args ...string) (worker.Config, error) {
		t.Helper()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		f := Register(fs, func(k string) string { return map[string]string{"DYN_NAMESPACE": "ns"}[k] })
		if err := fs.Parse(append([]string{"--model-path", "org/model"}, args...)); err != nil {
			t.Fatal(err)
		}
		w, _, err := f.Configs()
		return w, err
	}
	for _, tc := range []struct {
		args     []string
		mode     string
		endpoint string
	}{
		{nil, worker.ModeAggregated, "ns.backend.generate"},
		{[]string{"--disaggregation-mode", "decode"}, worker.ModeDecode, "ns.backend.generate"},
		{[]string{"--is-decode-worker"}, worker.ModeDecode, "ns.backend.generate"},
		{[]string{"--disaggregation-mode", "prefill"}, worker.ModePrefill, "ns.prefill.generate"},
		{[]string{"--is-prefill-worker"}, worker.ModePrefill, "ns.prefill.generate"},
		{[]string{"--is-prefill-worker", "--endpoint", "dyn://ns.backend.generate"}, worker.ModePrefill, "ns.backend.generate"},
	} {
		w, err := parse(tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if w.DisaggregationMode != tc.mode || w.Endpoint.String() != "dyn://"+tc.endpoint {
			t.Errorf("%v: mode %q endpoint %s; want %q, %s", tc.args, w.DisaggregationMode, w.Endpoint, tc.mode, tc.endpoint)
		}
	}
	if _, err := parse("--is-prefill-worker", "--is-decode-worker"); err == nil || !strings.Contains(err.Error(), "exclude") {
		t.Errorf("both roles: %v, want an error", err)
	}
	if _, err := parse("--disaggregation-mode", "encode"); err == nil {
		t.Error("--disaggregation-mode encode accepted")
	}
}

func TestOutputParsers(t *testing.T) {
	parse := func(args ...string) (worker.Config, error) {
		t.Helper()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		f := Register(fs, func(string) string { return "" })
		if err := fs.Parse(append([]string{"--model-path", "org/model"}, args...)); err != nil {
			t.Fatal(err)
		}
		w, _, err := f.Configs()
		return w, err
	}
	w, err := parse("--dyn-tool-call-parser", "Hermes", "--dyn-reasoning-parser", "deepseek_r1")
	if err != nil {
		t.Fatal(err)
	}
	if w.ToolCallParser != "hermes" || w.ReasoningParser != "deepseek_r1" {
		t.Errorf("parsers %q, %q", w.ToolCallParser, w.ReasoningParser)
	}
	_, err = parse("--dyn-tool-call-parser", "nope", "--dyn-reasoning-parser", "nada")
	for _, want := range []string{"--dyn-tool-call-parser", "nope", "hermes", "--dyn-reasoning-parser", "nada", "deepseek_r1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unknown parsers: error %v, want it to name %q", err, want)
		}
	}
}

func TestLoraFlags(t *testing.T) {
	parse := func(env map[string]string, args ...string) (worker.Config, error) {
		t.Helper()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		f := Register(fs, func(k string) string { return env[k] })
		if err := fs.Parse(append([]string{"--model-path", "org/model"}, args...)); err != nil {
			t.Fatal(err)
		}
		w, _, err := f.Configs()
		return w, err
	}
	w, err := parse(nil)
	if err != nil || w.Loras != nil || w.MaxLoras != 0 {
		t.Fatalf("defaults: loras %v, max %d, %v; want none and no limit", w.Loras, w.MaxLoras, err)
	}
	w, err = parse(nil, "--lora-adapters", " sql=file:///adapters/sql, chat=hf://acme/chat-lora@v2,law=/srv/law ", "--max-loras", "2")
	if err != nil {
		t.Fatal(err)
	}
	want := []worker.LoraAdapter{{Name: "sql", Source: "file:///adapters/sql"}, {Name: "chat", Source: "hf://acme/chat-lora@v2"}, {Name: "law", Source: "/srv/law"}}
	if !slices.Equal(w.Loras, want) || w.MaxLoras != 2 {
		t.Fatalf("loras %v, max %d; want %v, 2", w.Loras, w.MaxLoras, want)
	}

	// The variables, and a flag winning over its variable.
	env := map[string]string{"DYN_LORA_ADAPTERS": "a=/x", "DYN_MAX_LORAS": "3"}
	if w, err = parse(env); err != nil || !slices.Equal(w.Loras, []worker.LoraAdapter{{Name: "a", Source: "/x"}}) || w.MaxLoras != 3 {
		t.Fatalf("from the environment: %v, %d, %v", w.Loras, w.MaxLoras, err)
	}
	if w, err = parse(env, "--max-loras", "1"); err != nil || w.MaxLoras != 1 {
		t.Fatalf("--max-loras over DYN_MAX_LORAS: %d, %v", w.MaxLoras, err)
	}

	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--lora-adapters", "sql"}, `"sql" is not name=source`},
		{nil, []string{"--lora-adapters", "=file:///a"}, "is not name=source"},
		{nil, []string{"--lora-adapters", "a/b=file:///a"}, `LoRA adapter name "a/b"`},
		{nil, []string{"--lora-adapters", "a=/x,a=/y"}, `"a" is given twice`},
		{nil, []string{"--lora-adapters", "a=s3://bucket/a"}, "scheme s3 is not supported"},
		{nil, []string{"--lora-adapters", "a=adapters/a"}, "a relative path"},
		{nil, []string{"--lora-adapters", "a=hf://not-an-id"}, "not a hub repository id"},
		{nil, []string{"--max-loras", "-1"}, "must not be negative"},
		{map[string]string{"DYN_MAX_LORAS": "two"}, nil, "DYN_MAX_LORAS"},
	} {
		if _, err := parse(tc.env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: err = %v, want it to say %q", tc.env, tc.args, err, tc.want)
		}
	}
}
