package frontend

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const demoModel = "../../models/demo"

// textEngine is a worker engine that generates, token by token, the ids
// of a fixed text (cycled), honouring max_tokens, stop and kill, with a
// delay per token. It records how each request ended.
type textEngine struct {
	ids   []uint32
	delay time.Duration

	mu    sync.Mutex
	ended map[string]string // request id -> "length" | "stopped" | "killed"
	seen  chan string       // request ids as they start
}

func (e *textEngine) Start(context.Context, uint64) (backend.Config, error) {
	return backend.Config{Model: "demo", ContextLength: 4096, KVBlockSize: 16, TotalKVBlocks: 100, MaxNumSeqs: 8}, nil
}

func (e *textEngine) end(ctx context.Context, how string) {
	e.mu.Lock()
	e.ended[backend.RequestID(ctx)] = how
	e.mu.Unlock()
}

func (e *textEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if e.seen != nil {
		e.seen <- backend.RequestID(ctx)
	}
	n := req.MaxTokens(16)
	for i := range n {
		if backend.IsStopped(ctx) {
			e.end(ctx, "stopped")
			return emit(backend.Cancelled().WithUsage(len(req.TokenIDs), i))
		}
		if err := emit(backend.Tokens(e.ids[i%len(e.ids)])); err != nil {
			e.end(ctx, "killed")
			return err
		}
		select {
		case <-ctx.Done():
			e.end(ctx, "killed")
			return context.Cause(ctx)
		case <-time.After(e.delay):
		}
	}
	e.end(ctx, "length")
	return emit(backend.Length().WithUsage(len(req.TokenIDs), n))
}

func (e *textEngine) Cleanup(context.Context) error { return nil }

func (e *textEngine) endedAs(id string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended[id]
}

// stack is a frontend service and workers on one in-process discovery.
type stack struct {
	mem     *discovery.MemSpace
	svc     *Service
	url     string
	reg     *prometheus.Registry
	workers map[string]context.CancelFunc
	done    map[string]chan error
	key     string       // sent by get and post: the first of Config.APIKeys
	client  *http.Client // for get and post; nil: http.DefaultClient
}

func startRuntime(t *testing.T, mem *discovery.MemSpace) *runtime.DistributedRuntime {
	t.Helper()
	return runtimetest.Start(t, runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", GracePeriod: -1}, runtime.Deps{MemSpace: mem})
}

// newStack starts a frontend service and its model registry on a fresh
// in-process discovery; models configures how the models are routed.
func newStack(t *testing.T, cfg Config, models pipeline.Config) *stack {
	t.Helper()
	return newStackWith(t, cfg, models, Deps{})
}

// newStackWith is newStack with the service's logger and tracer provider
// taken from deps.
func newStackWith(t *testing.T, cfg Config, models pipeline.Config, deps Deps) *stack {
	t.Helper()
	return newStackOn(t, cfg, models, deps, nil)
}

// newStackOn is newStackWith whose service accepts through wrap(the
// listener) when wrap is not nil.
func newStackOn(t *testing.T, cfg Config, models pipeline.Config, deps Deps, wrap func(net.Listener) net.Listener) *stack {
	t.Helper()
	s := &stack{mem: discovery.NewMemSpace(), reg: prometheus.NewRegistry(), workers: map[string]context.CancelFunc{}, done: map[string]chan error{}}
	if len(cfg.APIKeys) > 0 {
		s.key = cfg.APIKeys[0]
	}
	rt := startRuntime(t, s.mem)
	met, err := NewMetrics(s.reg, MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := pipeline.New(models, pipeline.Deps{Runtime: rt, Registry: s.reg, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ShutdownGrace = -1
	svc, err := New(cfg, Deps{Models: ServeRegistry(reg), Registry: s.reg, Metrics: met, Logger: deps.Logger, TracerProvider: deps.TracerProvider, ResponseStore: deps.ResponseStore})
	if err != nil {
		t.Fatal(err)
	}
	s.svc = svc
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.url = "http://" + ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	// The HTTP service stops first, then the registry: as cmd/frontend
	// orders them.
	regCtx, stopReg := context.WithCancel(context.Background())
	regDone := make(chan error, 1)
	go func() { regDone <- reg.Run(regCtx) }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln, "", "") }()
	t.Cleanup(func() {
		for name := range s.workers {
			s.stopWorker(name)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service Run: %v", err)
		}
		stopReg()
		if err := <-regDone; err != nil {
			t.Errorf("registry Run: %v", err)
		}
	})
	return s
}

// startModels runs a model registry on rt until the test ends.
func startModels(t *testing.T, rt *runtime.DistributedRuntime) *pipeline.Registry {
	t.Helper()
	models, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- models.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("registry Run: %v", err)
		}
	})
	return models
}

// addWorker starts a worker serving the demo model under name.
func (s *stack) addWorker(t *testing.T, name string, eng backend.Engine) {
	t.Helper()
	rt := startRuntime(t, s.mem)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, rt, eng, worker.Config{
			Endpoint:  runtime.EndpointID{Namespace: "dynamo", Component: "backend-" + name, Name: "generate"},
			ModelPath: demoModel, ModelName: name,
		})
	}()
	s.workers[name], s.done[name] = cancel, done
	s.waitModels(t, func(ids []string) bool { return contains(ids, name) })
}

func (s *stack) stopWorker(name string) {
	if cancel := s.workers[name]; cancel != nil {
		cancel()
		<-s.done[name]
		delete(s.workers, name)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *stack) models(t *testing.T) []string {
	t.Helper()
	var list openai.ModelList
	resp := s.get(t, "/v1/models")
	if err := json.Unmarshal(resp.body, &list); err != nil {
		t.Fatalf("/v1/models: %v: %s", err, resp.body)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

func (s *stack) waitModels(t *testing.T, ok func([]string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(s.models(t)) {
		if time.Now().After(deadline) {
			t.Fatalf("models are %v", s.models(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (s *stack) get(t *testing.T, path string) response {
	t.Helper()
	return s.send(t, http.MethodGet, path, "")
}

func (s *stack) post(t *testing.T, path, body string) response {
	t.Helper()
	return s.send(t, http.MethodPost, path, body)
}

// send makes a request with the stack's key, if it has one.
func (s *stack) send(t *testing.T, method, path, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	client := s.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// sseData returns the data payloads of an SSE body, and whether it ended
// with [DONE].
func sseData(t *testing.T, body []byte) (chunks []string, done bool) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			if d == "[DONE]" {
				done = true
				continue
			}
			chunks = append(chunks, d)
		}
	}
	return chunks, done
}

// errorInfo checks that body is exactly OpenAI's nested error form,
// {"error":{"message","type","param","code"}} and nothing else, and
// returns the object.
func errorInfo(t *testing.T, body []byte) openai.ErrorInfo {
	t.Helper()
	var top map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || len(top) != 1 || top["error"] == nil {
		t.Fatalf("error body %s: want one object under \"error\"", body)
	}
	if keys := slices.Sorted(maps.Keys(top["error"])); !slices.Equal(keys, []string{"code", "message", "param", "type"}) {
		t.Errorf("error body %s: want exactly message, type, param, code", body)
	}
	var e openai.ErrorBody
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error
}

func helloEngine(t *testing.T, delay time.Duration) *textEngine {
	t.Helper()
	// Ids of "Hello world" in the demo tokenizer: H ell o " wor" ld.
	return &textEngine{ids: []uint32{39, 371, 78, 437, 299}, delay: delay, ended: map[string]string{}}
}

func TestChatAndCompletionsThroughTheStack(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))

	t.Run("chat streamed", func(t *testing.T) {
		r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`)
		if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || r.header.Get("x-request-id") == "" {
			t.Fatalf("status %d headers %v body %s", r.status, r.header, r.body)
		}
		chunks, done := sseData(t, r.body)
		var text strings.Builder
		var usage *openai.Usage
		finish := ""
		for i, c := range chunks {
			var ch openai.ChatCompletionChunk
			if err := json.Unmarshal([]byte(c), &ch); err != nil {
				t.Fatal(err)
			}
			if ch.ID != "chatcmpl-"+r.header.Get("x-request-id") {
				t.Errorf("chunk id %q, header id %q", ch.ID, r.header.Get("x-request-id"))
			}
			for _, choice := range ch.Choices {
				if (choice.Delta.Role == "assistant") != (i == 0) {
					t.Errorf("chunk %d role %q", i, choice.Delta.Role)
				}
				if choice.Delta.Content != nil {
					text.WriteString(*choice.Delta.Content)
				}
				if choice.FinishReason != nil {
					finish = *choice.FinishReason
				}
			}
			if ch.Usage != nil {
				usage = ch.Usage
			}
		}
		if !done || text.String() != "Hello world" || finish != "length" {
			t.Errorf("done %v text %q finish %q", done, text.String(), finish)
		}
		if usage == nil || usage.CompletionTokens != 5 || usage.TotalTokens != usage.PromptTokens+5 {
			t.Errorf("usage %+v", usage)
		}
	})
	t.Run("chat unary", func(t *testing.T) {
		r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
		var resp openai.ChatCompletion
		if err := json.Unmarshal(r.body, &resp); err != nil || r.status != 200 {
			t.Fatalf("status %d body %s", r.status, r.body)
		}
		if *resp.Choices[0].Message.Content != "Hello world" || resp.Usage.CompletionTokens != 5 || *resp.Choices[0].FinishReason != "length" {
			t.Errorf("response %s", r.body)
		}
	})
	t.Run("completions with a stop string", func(t *testing.T) {
		r := s.post(t, "/v1/completions", `{"model":"demo","prompt":"hi","max_tokens":10,"stop":" wor"}`)
		var resp openai.Completion
		if err := json.Unmarshal(r.body, &resp); err != nil || r.status != 200 {
			t.Fatalf("status %d body %s", r.status, r.body)
		}
		if resp.Choices[0].Text != "Hello" || *resp.Choices[0].FinishReason != "stop" {
			t.Errorf("response %s", r.body)
		}
	})
	t.Run("health lists the worker", func(t *testing.T) {
		r := s.get(t, "/health")
		if r.status != 200 || !strings.Contains(string(r.body), `"instance_id"`) || !strings.Contains(string(r.body), `"status":"healthy"`) {
			t.Errorf("health %d %s", r.status, r.body)
		}
		if r := s.get(t, "/live"); r.status != 200 {
			t.Errorf("live %d", r.status)
		}
	})
	t.Run("metrics count the requests", func(t *testing.T) {
		r := s.get(t, "/metrics")
		for _, want := range []string{
			`dynamo_frontend_requests_total{endpoint="chat_completions",error_type="",model="demo",request_type="stream",status="success"} 1`,
			`dynamo_frontend_requests_total{endpoint="chat_completions",error_type="",model="demo",request_type="unary",status="success"} 1`,
			`dynamo_frontend_inflight_requests{model="demo"} 0`,
			`dynamo_frontend_model_context_length{model="demo"} 4096`,
		} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

func TestBadRequestsGetClearErrors(t *testing.T) {
	s := newStack(t, Config{BodyLimit: 64 << 10}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	long := strings.Repeat("word ", 5000)
	cases := []struct {
		name, path, body string
		status           int
		phrase           string
		param            string // "" for null
	}{
		{"malformed JSON", "/v1/chat/completions", `{"model":"demo","messages":[`, 400, "invalid JSON", ""},
		{"wrong type", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, 400, "temperature", "temperature"},
		{"empty messages", "/v1/chat/completions", `{"model":"demo","messages":[]}`, 400, "messages", "messages"},
		{"unknown role", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"},{"role":"robot","content":"y"}]}`, 400, "unknown role", "messages[1].role"},
		{"unknown model", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "Model not found", ""},
		{"negative max_tokens", "/v1/completions", `{"model":"demo","prompt":"x","max_tokens":-1}`, 400, "max_tokens", "max_tokens"},
		{"temperature 5", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"temperature":5}`, 400, "temperature", "temperature"},
		{"stream_options without stream", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`, 400, "stream_options", "stream_options"},
		{"oversize body", "/v1/completions", `{"model":"demo","prompt":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "too large", ""},
		{"prompt over the context length", "/v1/completions", `{"model":"demo","prompt":"` + long[:len(long)-1] + `"}`, 400, "maximum context length is 4096 tokens", "prompt"},
		{"invalid UTF-8", "/v1/completions", "{\"model\":\"demo\",\"prompt\":\"\xff\xfe\"}", 400, "UTF-8", ""},
		{"unknown field", "/v1/completions", `{"model":"demo","prompt":"x","bogus":1}`, 400, "Unsupported parameter", "bogus"},
		{"functions with tools", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"g"}}]}`, 400, "functions", "functions"},
		{"tool_choice names an unknown function", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"h"}}}`, 400, "not in `tools`", "tool_choice"},
		{"tool with an invalid schema", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"g","parameters":"object"}}]}`, 400, "JSON schema", "tools[0].function.parameters"},
		{"n above the limit", "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"n":129}`, 400, "n must be between 1 and 128", "n"},
		{"unknown route", "/v1/nothing", `{}`, 404, "Route not found: POST /v1/nothing", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.post(t, c.path, c.body)
			e := errorInfo(t, r.body)
			if !strings.Contains(e.Message, c.phrase) {
				t.Errorf("message %q, want it to contain %q", e.Message, c.phrase)
			}
			var param *string
			if c.param != "" {
				param = &c.param
			}
			want := openai.ErrorInfo{Message: e.Message, Type: openai.ErrorType(c.status), Param: param, Code: json.RawMessage(strconv.Itoa(c.status))}
			if r.status != c.status {
				t.Errorf("status %d, want %d", r.status, c.status)
			}
			if diff := cmp.Diff(want, e); diff != "" {
				t.Errorf("error body %s (-want +got):\n%s", r.body, diff)
			}
		})
	}
	if r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"max_tokens":3}`); r.status != 200 {
		t.Errorf("a good request after the bad ones: %d %s", r.status, r.body)
	}
	r := s.get(t, "/metrics")
	if !strings.Contains(string(r.body), `error_type="validation",model="unknown_model"`) || strings.Contains(string(r.body), `model="nope"`) {
		t.Errorf("bad requests must be labelled unknown_model, never with the client's name")
	}
}

func TestClientDisconnectKillsTheRequest(t *testing.T) {
	// Streams on net/http's handler, and streams that took their
	// connection over (detach.go), whose watcher tells the client left.
	for _, at := range []int{-1, 1} {
		t.Run(fmt.Sprintf("DetachStreamsAt=%d", at), func(t *testing.T) {
			testClientDisconnect(t, Config{DetachStreamsAt: at})
		})
	}
}

func testClientDisconnect(t *testing.T, cfg Config) {

	s := newStack(t, cfg, pipeline.Config{})
	eng := helloEngine(t, 20*time.Millisecond)
	eng.seen = make(chan string, 1)
	s.addWorker(t, "demo", eng)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":1000,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("x-request-id")
	if got := <-eng.seen; got != id {
		t.Fatalf("worker saw request %q, client %q", got, id)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for eng.endedAs(id) == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if how := eng.endedAs(id); how != "killed" {
		t.Fatalf("worker's generation ended as %q, want killed by the disconnect", how)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m := string(s.get(t, "/metrics").body)
		if strings.Contains(m, `error_type="cancelled",model="demo",request_type="stream",status="error"} 1`) &&
			strings.Contains(m, "dynamo_frontend_disconnected_clients 1") && strings.Contains(m, `dynamo_frontend_inflight_requests{model="demo"} 0`) {
			return
		}
	}
	t.Errorf("metrics do not show one cancelled request:\n%s", grepLines(string(s.get(t, "/metrics").body), "demo"))
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestModelsComeAndGoWithWorkers(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo-a", helloEngine(t, 0))
	s.addWorker(t, "demo-b", helloEngine(t, 0))
	for _, name := range []string{"demo-a", "demo-b"} {
		r := s.post(t, "/v1/chat/completions", `{"model":"`+name+`","messages":[{"role":"user","content":"x"}],"max_tokens":2}`)
		var resp openai.ChatCompletion
		if err := json.Unmarshal(r.body, &resp); err != nil || r.status != 200 || resp.Model != name {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if r := s.get(t, "/v1/models/demo-b"); r.status != 200 || !strings.Contains(string(r.body), `"id":"demo-b"`) {
		t.Errorf("/v1/models/demo-b: %d %s", r.status, r.body)
	}
	s.stopWorker("demo-a")
	s.waitModels(t, func(ids []string) bool { return !contains(ids, "demo-a") && contains(ids, "demo-b") })
	// The model leaves /v1/models as soon as its worker cannot answer; its
	// card's removal follows, and with it the 404 and the gauges' removal.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		gone := !strings.Contains(string(s.get(t, "/metrics").body), `dynamo_frontend_model_context_length{model="demo-a"}`)
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the removed model's gauges are still exported")
		}
	}
	if r := s.post(t, "/v1/chat/completions", `{"model":"demo-a","messages":[{"role":"user","content":"x"}]}`); r.status != 404 {
		t.Errorf("removed model answered %d %s", r.status, r.body)
	}
}

func TestShutdownTurnsHealthAndDrains(t *testing.T) {
	mem := discovery.NewMemSpace()
	svc, err := New(Config{ShutdownGrace: 300 * time.Millisecond}, Deps{Models: ServeRegistry(startModels(t, startRuntime(t, mem)))})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln, "", "") }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("health never turned 200")
		}
	}
	cancel()
	var sawDown atomic.Bool
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !sawDown.Load(); time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(url + "/live")
		if err != nil {
			break
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 503 && strings.Contains(string(b), "shutting_down") {
			sawDown.Store(true)
		}
	}
	if !sawDown.Load() {
		t.Error("/live never answered 503 shutting_down during the grace period")
	}
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}
