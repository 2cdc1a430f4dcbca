package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// With MOCKER_RUN_MAIN=1 the test binary is the mocker command itself, so
// the tests below run real mocker processes.
func TestMain(m *testing.M) {
	if os.Getenv("MOCKER_RUN_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Exit(run(os.Args[i+1:], os.Getenv, os.Stderr))
			}
		}
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func mockerCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), append(env, "MOCKER_RUN_MAIN=1")...)
	return cmd
}

type proc struct {
	cmd    *exec.Cmd
	exited chan error
}

func startMocker(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := mockerCmd(env, args...)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("mocker log:\n%s", logs.String())
		}
	})
	return p
}

func keys(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	resp, err := cli.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// Two mocker processes register in a real etcd (instance and card keys);
// SIGTERM removes one's keys at once while its in-flight stream finishes;
// SIGKILL leaves the other's keys until the lease expires.
func TestMockerProcessesRegisterDrainAndExpire(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	etcd := testenv.StartEtcd(t)
	env := []string{"ETCD_ENDPOINTS=" + etcd.URL, "ETCD_LEASE_TTL=2", "DYN_TCP_RPC_HOST=127.0.0.1",
		"DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0.2", "DYN_LOG=warn"}
	args := []string{"--model-path", "../../models/demo", "--deterministic", "--speedup-ratio", "5"}
	a := startMocker(t, env, args...)
	b := startMocker(t, env, args...)

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	testenv.WaitFor(t, 30*time.Second, "two instances and two model cards", func() bool {
		return len(keys(t, cli, "v1/instances/dynamo/backend/generate/")) == 2 && len(keys(t, cli, "v1/mdc/dynamo/backend/generate/")) == 2
	})

	// A caller streams from one worker while that worker gets SIGTERM.
	caller, err := runtime.New(t.Context(), runtime.Config{EtcdEndpoints: []string{etcd.URL}, TCPHost: "127.0.0.1"}, runtime.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	callerCtx, stopCaller := context.WithCancel(context.Background())
	callerDone := make(chan error, 1)
	go func() { callerDone <- caller.Run(callerCtx) }()
	defer func() { stopCaller(); <-callerDone }()
	cl, err := caller.Endpoint(runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"}).Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the caller to discover both", func() bool { return len(cl.InstanceIDs()) == 2 })
	// Which process owns which id: SIGTERM a, then see which id leaves.
	const maxTokens = 60
	req, _ := json.Marshal(backend.Request{Model: "demo", TokenIDs: []uint32{1, 2, 3, 4}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(maxTokens))}})
	type result struct {
		tokens []uint32
		last   *backend.Output
		err    error
	}
	results := make(chan result, 2)
	firstToken := make(chan struct{}, 2)
	for _, id := range cl.InstanceIDs() {
		go func() {
			var r result
			r.err = cl.Call(runtime.NewContext(context.Background(), ""), id, req, func(item []byte) error {
				var o backend.Output
				if err := json.Unmarshal(item, &o); err != nil {
					return err
				}
				if len(r.tokens) == 0 {
					firstToken <- struct{}{}
				}
				r.tokens = append(r.tokens, o.TokenIDs...)
				r.last = &o
				return nil
			})
			results <- r
		}()
	}
	<-firstToken
	<-firstToken
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	testenv.WaitFor(t, 2*time.Second, "SIGTERM to remove the worker's keys at once", func() bool {
		return len(keys(t, cli, "v1/instances/dynamo/backend/generate/")) == 1 && len(keys(t, cli, "v1/mdc/dynamo/backend/generate/")) == 1
	})
	tok, err := tokenizer.FromDir("../../models/demo")
	if err != nil {
		t.Fatal(err)
	}
	vocab := outputVocabulary(tok, []uint32{511, 508})
	if len(vocab) < 100 {
		t.Fatalf("output vocabulary of the demo model has %d ids", len(vocab))
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("a stream in flight during SIGTERM failed: %v", r.err)
		}
		if len(r.tokens) != maxTokens || r.last.FinishReason == nil || r.last.FinishReason.Kind != backend.FinishLength {
			t.Fatalf("stream got %d tokens, last %+v; want %d then length", len(r.tokens), r.last, maxTokens)
		}
		for i, tok := range r.tokens {
			if want := mocker.DeterministicTokenIn(vocab, 0, 4+i); tok != want {
				t.Fatalf("token %d = %d, want the deterministic %d", i, tok, want)
			}
		}
	}
	select {
	case err := <-a.exited:
		if err != nil {
			t.Fatalf("mocker after SIGTERM: %v, want exit 0", err)
		}
		a.exited <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("mocker did not exit within 20s of SIGTERM")
	}

	// SIGKILL: nobody revokes the lease; the keys go when it expires.
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	if n := len(keys(t, cli, "v1/instances/dynamo/backend/generate/")); n != 1 {
		t.Fatalf("right after SIGKILL %d instance keys, want 1 (until the lease expires)", n)
	}
	testenv.WaitFor(t, 15*time.Second, "the killed worker's lease to expire", func() bool {
		return len(keys(t, cli, "v1/instances/")) == 0 && len(keys(t, cli, "v1/mdc/")) == 0
	})
}

func TestBadFlagsExitTwoWithAReason(t *testing.T) {
	badCanned := filepath.Join(t.TempDir(), "canned.json")
	if err := writeFile(badCanned, `[{"prompt_contains": "", "text": "hi"}]`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--model-path is required"},
		{[]string{"--model-path", "../../models/demo", "--speedup-ratio", "fast"}, "speedup-ratio"},
		{[]string{"--model-path", "../../models/demo", "--watermark", "2"}, "atermark"},
		{[]string{"--model-path", "../../models/demo", "--disaggregation-mode", "both"}, "disaggregation mode"},
		{[]string{"--model-path", "../../models/demo", "--endpoint", "dyn://Bad.Name"}, "endpoint"},
		{[]string{"--model-path", "../../models/demo", "--bootstrap-ports", "0"}, "--bootstrap-ports needs --disaggregation-mode prefill"},
		{[]string{"--model-path", "../../models/demo", "--is-prefill-worker", "--is-decode-worker"}, "exclude each other"},
		{[]string{"--model-path", "../../models/demo", "--canned-responses", "no-such-file.json"}, "--canned-responses: open no-such-file.json"},
		{[]string{"--model-path", "../../models/demo", "--canned-responses", badCanned}, "prompt_contains is empty"},
		{[]string{"--model-path", "../../models/demo", "--embedding-dim", "-1"}, "--embedding-dim -1"},
		{[]string{"--model-path", "../../models/demo", "--embedding-dim", "8", "--is-prefill-worker"}, "not disaggregated"},
		{[]string{"--model-path", "../../models/demo", "--dyn-tool-call-parser", "hermes2"}, `unknown tool call parser "hermes2" (known: deepseek_v3, deepseek_v3_1, default, harmony, hermes,`},
		{[]string{"--model-path", "../../models/demo", "--dyn-reasoning-parser", "r1"}, `unknown parser "r1" (known: basic,`},
	} {
		cmd := mockerCmd([]string{"DYN_DISCOVERY_BACKEND=mem"}, tc.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("mocker %v: %v, stderr %q; want exit 2 mentioning %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}

func TestHelpListsFlagsWithDefaults(t *testing.T) {
	cmd := mockerCmd(nil, "--help")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("--help: %v", err)
	}
	help := stderr.String()
	for _, want := range []string{"-num-gpu-blocks-override", "(default 16384)", "-block-size", "(default 64)", "-max-num-seqs",
		"-max-num-batched-tokens", "-enable-prefix-caching", "-no-enable-chunked-prefill", "-watermark", "-speedup-ratio",
		"-data-parallel-size", "-startup-time", "-context-length", "-extra-engine-args", "-disaggregation-mode",
		"-num-workers", "-deterministic", "-migration-limit", "-model-path", "-model-name", "-endpoint",
		"-discovery-backend", "-request-plane", "-bootstrap-ports", "-kv-transfer-bandwidth", "(default 64)", "-kv-bytes-per-token", "-kv-cache-dtype", "-embedding-dim", "-canned-responses", "-dyn-tool-call-parser", "-dyn-reasoning-parser", "-is-prefill-worker", "ETCD_ENDPOINTS", "DYN_MOCKER_",
		"DYN_HEALTH_CHECK_ENABLED", "DYN_CANARY_WAIT_TIME", "DYN_HEALTH_CHECK_REQUEST_TIMEOUT", "DYN_HEALTH_CHECK_PAYLOAD"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// With the NATS request plane the mocker publishes its KV events on the
// event plane: a request's prompt blocks arrive as a "stored" event from
// the worker's instance id.
func TestMockerPublishesKVEventsOnNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	etcd, nc := testenv.StartEtcd(t), testenv.StartNATS(t)
	env := []string{"ETCD_ENDPOINTS=" + etcd.URL, "NATS_SERVER=" + nc.URL, "DYN_REQUEST_PLANE=nats",
		"DYN_TCP_RPC_HOST=127.0.0.1", "DYN_LOG=warn", "DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0"}
	startMocker(t, env, "--model-path", "../../models/demo", "--block-size", "4", "--speedup-ratio", "50")

	sub, err := nats.Connect(nc.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	events := make(chan *nats.Msg, 64)
	s, err := sub.ChanSubscribe(kvblock.KVEventsSubject("dynamo", "backend"), events)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unsubscribe()
	_ = sub.Flush()

	caller, err := runtime.New(t.Context(), runtime.Config{EtcdEndpoints: []string{etcd.URL}, RequestPlane: runtime.PlaneNATS,
		NATSServer: nc.URL, TCPHost: "127.0.0.1"}, runtime.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- caller.Run(ctx) }()
	defer func() { cancel(); <-done }()
	cl, err := caller.Endpoint(runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"}).Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cl.WaitForInstances(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(backend.Request{Model: "demo", TokenIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(4))}})
	if err := cl.Call(runtime.NewContext(t.Context(), ""), ids[0], req, func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	seq := uint64(0)
	for {
		select {
		case m := <-events:
			// The wire form: a MessagePack envelope from the worker,
			// numbered per subject, around a MessagePack RouterEvent.
			env, err := runtime.DecodeEnvelope(m.Data)
			if err != nil {
				t.Fatalf("event plane message %x: %v", m.Data, err)
			}
			if env.PublisherID != ids[0] || env.Topic != "kv-events" || env.PublishedAt == 0 {
				t.Fatalf("envelope publisher %x topic %q published_at %d; want %x, kv-events, a time", env.PublisherID, env.Topic, env.PublishedAt, ids[0])
			}
			if env.Sequence != seq {
				t.Fatalf("envelope sequence %d, want %d", env.Sequence, seq)
			}
			seq++
			var ev kvblock.RouterEvent
			if err := kvblock.Unmarshal(env.Payload, &ev); err != nil {
				t.Fatalf("event %x: %v", env.Payload, err)
			}
			if ev.WorkerID != ids[0] {
				t.Fatalf("event from worker %x, want %x", ev.WorkerID, ids[0])
			}
			if ev.Event.Data.Stored == nil {
				continue
			}
			// The first two full blocks of the prompt (block size 4).
			want := kvblock.LocalHashes([]uint32{1, 2, 3, 4, 5, 6, 7, 8}, 4)
			got := ev.Event.Data.Stored.Blocks
			if len(got) < 2 || got[0].TokensHash != want[0] || got[1].TokensHash != want[1] {
				t.Fatalf("stored event %+v, want the prompt's block hashes %x", ev, want)
			}
			return
		case <-timeout:
			t.Fatal("no stored KV event on the event plane within 10s")
		}
	}
}

func TestOutputVocabularyIsOrdinaryText(t *testing.T) {
	tok, err := tokenizer.FromDir("../../models/demo")
	if err != nil {
		t.Fatal(err)
	}
	vocab := outputVocabulary(tok, []uint32{511, 508})
	for _, id := range vocab {
		s, _ := tok.Decode([]uint32{id}, false)
		if tok.IsSpecial(id) || id == 511 || id == 508 || s == "" || strings.ContainsRune(s, '\uFFFD') {
			t.Errorf("id %d (%q) should not be an output token", id, s)
		}
	}
	if len(vocab) < 100 || len(vocab) >= tok.VocabSize() {
		t.Errorf("output vocabulary has %d of %d ids", len(vocab), tok.VocabSize())
	}
}

// With DYN_HEALTH_CHECK_ENABLED the idle mocker gets canaries and passes
// them: its status server counts them and stays ready.
func TestMockerPassesItsHealthChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var logs testenv.Buffer
	cmd := mockerCmd([]string{"DYN_DISCOVERY_BACKEND=mem", "DYN_TCP_RPC_HOST=127.0.0.1", "DYN_SYSTEM_HOST=127.0.0.1", "DYN_SYSTEM_PORT=0",
		"DYN_HEALTH_CHECK_ENABLED=true", "DYN_CANARY_WAIT_TIME=0.2", "DYN_HEALTH_CHECK_REQUEST_TIMEOUT=5"},
		"--model-path", "../../models/demo", "--speedup-ratio", "10")
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
			t.Logf("mocker log:\n%s", logs.String())
		}
	})
	listening := regexp.MustCompile(`msg="runtime: status server listening" addr=(\S+)`)
	var addr string
	testenv.WaitFor(t, 30*time.Second, "the status server's address", func() bool {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	passed := regexp.MustCompile(`dynamo_component_health_checks_total\{[^}]*result="pass"\} ([1-9][0-9]*)`)
	testenv.WaitFor(t, 30*time.Second, "two passing health checks", func() bool {
		_, metrics := get("/metrics")
		m := passed.FindStringSubmatch(metrics)
		return m != nil && m[1] != "1"
	})
	if code, body := get("/health"); code != http.StatusOK {
		t.Fatalf("/health of a mocker passing its health checks = %d %s", code, body)
	}
	if strings.Contains(logs.String(), "endpoint unhealthy") {
		t.Fatal("the mocker failed a health check")
	}
}

func TestServeVLLMAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var logs testenv.Buffer
	// No discovery, NATS or etcd: the environment names none.
	cmd := mockerCmd(nil, "--model-path", "../../models/demo", "--speedup-ratio", "10", "--deterministic",
		"--serve-vllm-api", "--vllm-port", "0", "--kv-events-port", "0", "--kv-events-replay-port", "0", "--startup-time", "0.2")
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
			t.Logf("mocker log:\n%s", logs.String())
		}
	})
	listening := regexp.MustCompile(`msg="mocker: vLLM API listening" addr=(\S+)`)
	publishing := regexp.MustCompile(`msg="mocker: vLLM KV events publishing" pub=(\S+) replay=(\S+)`)
	var addr string
	testenv.WaitFor(t, 30*time.Second, "the vLLM API's address", func() bool {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	// The KV event sockets are logged just after the HTTP address.
	testenv.WaitFor(t, 10*time.Second, "the KV event sockets' addresses", func() bool { return publishing.MatchString(logs.String()) })
	if m := publishing.FindStringSubmatch(logs.String()); m == nil || !strings.HasPrefix(m[1], "127.0.0.1:") || !strings.HasPrefix(m[2], "127.0.0.1:") {
		t.Errorf("KV events addresses logged as %q", m)
	}
	health := func() int {
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testenv.WaitFor(t, 30*time.Second, "/health 200", func() bool { return health() == http.StatusOK })
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Hello there", "max_tokens": 4, "return_token_ids": true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Model   string `json:"model"`
		Choices []struct {
			Text     string   `json:"text"`
			TokenIDs []uint32 `json:"token_ids"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if len(got.Choices) != 1 || len(got.Choices[0].TokenIDs) != 4 || got.Choices[0].Text == "" || got.Model == "" {
		t.Errorf("answer %+v", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("no exit after SIGTERM")
	}
}
