package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
)

// With WORKER_RUN_MAIN=1 the test binary is the worker command itself, so
// the tests below run real worker processes.
func TestMain(m *testing.M) {
	if os.Getenv("WORKER_RUN_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Exit(run(os.Args[i+1:], os.Getenv, os.Stderr))
			}
		}
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func workerCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), append(env, "WORKER_RUN_MAIN=1")...)
	return cmd
}

var memEnv = []string{"DYN_DISCOVERY_BACKEND=mem", "DYN_TCP_RPC_HOST=127.0.0.1", "DYN_SYSTEM_PORT=0", "DYN_SYSTEM_HOST=127.0.0.1"}

// An unknown flag prints two lines (the reason, and where the flags are
// listed), not the whole usage.
func TestUnknownFlagPrintsOneLineAndPointsToHelp(t *testing.T) {
	cmd := workerCmd(memEnv, "--model-path", "../../models/demo", "--foo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	want := "worker: flag provided but not defined: -foo\nrun 'worker --help' for the flags\n"
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || stderr.String() != want {
		t.Errorf("worker --foo: %v, stderr %q; want exit 2 and %q", err, stderr.String(), want)
	}
}

func TestBadFlagsExitTwoWithAReason(t *testing.T) {
	model := []string{"--model-path", "../../models/demo"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"--engine-url", "http://127.0.0.1:1"}, model...), "--engine is required"},
		{append([]string{"--engine", "tgi", "--engine-url", "http://127.0.0.1:1"}, model...), `--engine "tgi"`},
		{append([]string{"--engine", "vllm"}, model...), "--engine-url is required"},
		{append([]string{"--engine", "vllm", "--engine-url", "localhost:8000"}, model...), "want http://host:port"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--engine-start-timeout", "soon"}, model...), "--engine-start-timeout"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--context-length", "x"}, model...), "context-length"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--engine-metrics-interval", "-1s"}, model...), "--engine-metrics-interval"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--kv-events-endpoint", "tcp://127.0.0.1:5557"}, model...), "needs --kv-block-size"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--kv-events-replay-endpoint", "tcp://127.0.0.1:5558"}, model...), "needs --kv-events-endpoint"},
		{[]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1"}, "--model-path is required"},
		{[]string{"--engine", "llamacpp", "--engine-url", "http://127.0.0.1:1"}, "--model-path is required"},
		{[]string{"--engine", "llamacpp", "--engine-url", "http://127.0.0.1:1", "--model-path", "qwen3-0.6b-q8_0.gguf"}, "only --engine llamacpp with --native-framework-processing serves it"},
		{[]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--native-framework-processing", "--model-path", "m.gguf"}, "is a GGUF file"},
		{[]string{"--engine", "llamacpp", "--engine-url", "http://127.0.0.1:1", "--native-framework-processing", "--custom-jinja-template", "t.jinja"}, "--custom-jinja-template needs the model's files"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--disaggregation-mode", "prefill"}, model...), "serves aggregated engines only"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--is-decode-worker"}, model...), "serves aggregated engines only"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--vllm-api", "chat"}, model...), `--vllm-api "chat"`},
		{append([]string{"--engine", "sglang", "--engine-url", "http://127.0.0.1:1", "--vllm-api", "generate"}, model...), "needs --engine vllm"},
		{append([]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--kv-events-endpoint", "ipc:///tmp/kv", "--kv-block-size", "16", "--data-parallel-size", "2"}, model...), "tcp://host:port"},
	} {
		cmd := workerCmd(memEnv, tc.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("worker %v: %v, stderr %q; want exit 2 mentioning %q", tc.args, err, stderr.String(), tc.want)
		}
	}
	// The KV-event flags have their variables like every engine flag.
	cmd := workerCmd(append(memEnv, "DYN_WORKER_KV_EVENTS_ENDPOINT=tcp://127.0.0.1:5557"), "--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--model-path", "../../models/demo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "needs --kv-block-size") {
		t.Errorf("DYN_WORKER_KV_EVENTS_ENDPOINT without a block size: %v, stderr %q", err, stderr.String())
	}
}

func TestHelpListsFlags(t *testing.T) {
	cmd := workerCmd(nil, "--help")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"-engine ", "-engine-url", "-engine-start-timeout", "10m0s", "-engine-model", "-context-length",
		"-kv-block-size", "-kv-events-endpoint", "-kv-events-replay-endpoint", "-kv-events-topic", "-model-path", "-model-name",
		"-endpoint", "-migration-limit", "-dyn-tool-call-parser", "-discovery-backend", "DYN_WORKER_", "-vllm-api",
		"DYN_WORKER_KV_EVENTS_ENDPOINT", "DYN_WORKER_KV_EVENTS_REPLAY_ENDPOINT", "DYN_WORKER_KV_EVENTS_TOPIC"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// An engine that never answers: exit 1 with one clear line after the
// bounded wait.
func TestEngineThatDoesNotAnswerExitsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := workerCmd(append(memEnv, "DYN_LOG=error"), "--engine", "sglang", "--engine-url", "http://"+addr,
		"--engine-start-timeout", "1s", "--model-path", "../../models/demo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "did not become ready within 1s") {
		t.Fatalf("exit %v, stderr %q", err, stderr.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

// The binary against a vLLM-dialect server: it waits for /health, reads
// the model info and serves.
func TestServesAVLLMEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	srv := bridgetest.New("vllm", bridgetest.Options{Model: "demo", Unhealthy: 2})
	defer srv.Close()
	var logs testenv.Buffer
	cmd := workerCmd(append(memEnv, "DYN_LOG=info"), "--engine", "vllm", "--engine-url", srv.URL, "--model-path", "../../models/demo")
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	testenv.WaitFor(t, 30*time.Second, "the worker to serve", func() bool {
		return strings.Contains(logs.String(), "worker: serving")
	})
	if srv.HealthCalls() < 3 || !strings.Contains(logs.String(), "context_length=4096") {
		t.Errorf("health calls %d; want the wait through two 503s and the engine's context length in the log", srv.HealthCalls())
	}
}

// An engine that serves another model than the worker's (--model-path,
// --model-name): exit 1 with one line naming both, unless --engine-model
// names the engine's model or '*' accepts any.
func TestEngineServingAnotherModelExitsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	srv := bridgetest.New("vllm", bridgetest.Options{Model: "org/other-model"})
	defer srv.Close()
	for _, extra := range [][]string{nil, {"--model-name", "demo-chat"}} {
		cmd := workerCmd(append(memEnv, "DYN_LOG=error"), append([]string{"--engine", "vllm", "--engine-url", srv.URL,
			"--model-path", "../../models/demo"}, extra...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		out := stderr.String()
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, `serves "org/other-model"`) ||
			!strings.Contains(out, `"../../models/demo"`) || !strings.Contains(out, "--engine-model") {
			t.Errorf("worker %v: %v, stderr %q; want exit 1 naming both models", extra, err, out)
		}
		if lines := strings.Count(strings.TrimSpace(out), "\n"); lines != 0 {
			t.Errorf("worker %v: %d lines on stderr, want one: %q", extra, lines+1, out)
		}
	}
	for _, name := range []string{"org/other-model", "*"} {
		var logs testenv.Buffer
		cmd := workerCmd(append(memEnv, "DYN_LOG=info"), "--engine", "vllm", "--engine-url", srv.URL,
			"--model-path", "../../models/demo", "--engine-model", name)
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		testenv.WaitFor(t, 30*time.Second, "the worker to serve", func() bool {
			select {
			case err := <-exited:
				t.Fatalf("--engine-model %s: the worker exited: %v\n%s", name, err, logs.String())
			default:
			}
			return strings.Contains(logs.String(), "worker: serving")
		})
		// Served under the name derived from --model-path, not the
		// engine's: the engine's name is matched, never adopted.
		if !servedAs(logs.String(), "demo") {
			t.Errorf("--engine-model %s: want the model served as demo (from --model-path), log:\n%s", name, logs.String())
		}
		_ = cmd.Process.Kill()
		<-exited
	}
}

// servedAs reports whether the worker's "serving" log line names model.
func servedAs(logs, model string) bool {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "worker: serving") {
			return strings.Contains(line, " model="+model+" ") || strings.HasSuffix(line, " model="+model)
		}
	}
	return false
}
