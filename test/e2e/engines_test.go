package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Lines the mocker logs in its vLLM API mode (--serve-vllm-api).
var (
	vllmListening = regexp.MustCompile(`msg="mocker: vLLM API listening" addr=(\S+)`)
	vllmKVEvents  = regexp.MustCompile(`msg="mocker: vLLM KV events publishing" pub=(\S+) replay=(\S+)`)
)

// vllmEngine is a mocker process serving vLLM's HTTP API with token ids
// and vLLM's ZeroMQ KV events: an engine server as cmd/worker finds it.
type vllmEngine struct {
	*process
	url         string // http://host:port
	pub, replay string // tcp://host:port of its KV event sockets
}

// startVLLMEngine starts a mocker in its vLLM API mode.
func startVLLMEngine(t testing.TB, name string, extra ...string) *vllmEngine {
	t.Helper()
	args := append([]string{"--model-path", demoModel, "--serve-vllm-api", "--vllm-port", "0",
		"--kv-events-port", "0", "--kv-events-replay-port", "0"}, extra...)
	p := startProcess(t, name, mockerBin, vllmListening, nil, args...)
	e := &vllmEngine{process: p, url: "http://" + p.address(t)}
	m := p.waitLine(t, addrTimeout, "its KV event sockets", vllmKVEvents)
	e.pub, e.replay = tcpURL(m[1]), tcpURL(m[2])
	return e
}

func tcpURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "tcp://" + addr
}

// running is the engine's vllm:num_requests_running.
func (e *vllmEngine) running(t testing.TB) float64 {
	t.Helper()
	resp, err := e.http.Get(e.url + "/metrics")
	if err != nil {
		e.fatalf(t, "%s /metrics: %v", e.name, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "vllm:num_requests_running") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				return v
			}
		}
	}
	e.fatalf(t, "%s /metrics has no vllm:num_requests_running", e.name)
	return 0
}

// startBridge starts cmd/worker in front of engine e, with its KV events.
func (c *cluster) startBridge(name string, e *vllmEngine, extra ...string) *worker {
	c.t.Helper()
	args := append(append([]string{"--engine", "vllm", "--engine-url", e.url, "--model-path", demoModel,
		"--kv-events-endpoint", e.pub, "--kv-events-replay-endpoint", e.replay, "--kv-block-size", fmt.Sprint(kvBlockSize),
		"--engine-start-timeout", "60s"}, c.args...), extra...)
	env := append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0", kvLeaseTTL)
	return &worker{process: startProcess(c.t, name, workerBin, statusListening, env, args...)}
}

// TestEngineBridge serves the demo model through cmd/worker --engine vllm
// in front of two mockers in their vLLM API mode (real processes with the
// mocker's timing, token ids over HTTP, KV events over ZeroMQ), with a
// KV-routing frontend on NATS: a streamed chat through openai-go, a
// client's disconnect reaching the engine, prefix-sharing requests
// following the engine that cached the prefix (from its ZeroMQ events),
// and a bridge SIGKILLed mid-stream, whose stream another one finishes.
func TestEngineBridge(t *testing.T) {
	c := newCluster(t, "etcd", "nats")
	engines := []*vllmEngine{
		startVLLMEngine(t, "vllm-1", kvMocker...),
		startVLLMEngine(t, "vllm-2", kvMocker...),
	}
	r := &kvRig{c: c}
	for i, e := range engines {
		r.workers = append(r.workers, c.startBridge(fmt.Sprintf("bridge-%d", i+1), e, "--migration-limit", "2"))
	}
	r.f = r.startFrontend(t)
	f := r.f

	t.Run("streamed chat through openai-go", func(t *testing.T) {
		stream := f.sdk.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
			Model:         "demo",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello through a real engine's API!")},
			MaxTokens:     openai.Int(24),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].Message.Content == "" || acc.Choices[0].FinishReason != "length" || acc.Usage.CompletionTokens != 24 {
			t.Errorf("answer %+v, usage %+v: want 24 tokens of text ending with length", acc.Choices, acc.Usage)
		}
	})

	t.Run("prefix-sharing requests follow the engine that cached the prefix", func(t *testing.T) {
		r.prefix, r.holder = r.followPrefix(t, f, "bridge")
		// The router knew the prefix from the engines' ZeroMQ events,
		// relayed by the bridges, not from guessing.
		if mode := f.health(t).KVRouting["demo"]; mode != "events" {
			t.Errorf(`/health kv_routing["demo"] = %q, want "events"`, mode)
		}
		if v, ok := r.holder.scrape(t).value("dynamo_kvevents_events_total", `event_type="stored"`); !ok || v == 0 {
			t.Errorf("the prefix's bridge relayed %v stored events (found %v), want some", v, ok)
		}
	})

	t.Run("a client's disconnect reaches the engine", func(t *testing.T) {
		resp := f.openChatStream(t, 3000, 3)
		total := func() float64 { return engines[0].running(t) + engines[1].running(t) }
		if total() != 1 {
			t.Fatalf("engines run %v requests while the stream is open, want 1", total())
		}
		resp.Body.Close()
		waitFor(t, 2*time.Second, "the engine to abort the request", func() bool { return total() == 0 }, engines[0].process, engines[1].process)
	})

	t.Run("guided JSON and tool_choice required through the engine", func(t *testing.T) {
		// The frontend's guided decoding reaches the engine as vLLM's
		// structured_outputs (through /inference/v1/generate), and the
		// mocker's vLLM API answers the schema.
		schema := object{"type": "object", "properties": object{"city": object{"type": "string"}, "days": object{"type": "integer"}},
			"required": []string{"city", "days"}}
		u := f.unary(t, chatPath, object{"model": "demo", "max_tokens": 200,
			"messages":        []object{{"role": "user", "content": "The forecast, as JSON."}},
			"response_format": object{"type": "json_schema", "json_schema": object{"name": "forecast", "schema": schema}}})
		var got map[string]any
		if err := json.Unmarshal([]byte(u.text()), &got); err != nil || got["city"] == nil || got["days"] == nil {
			t.Errorf("guided JSON answer %q: want an object with city and days (%v)", u.text(), err)
		}
		c, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model:      "demo",
			Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Anything at all.")},
			Tools:      []openai.ChatCompletionToolUnionParam{weatherTool},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
			MaxTokens:  openai.Int(200),
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls := c.Choices[0].Message.ToolCalls; len(calls) == 0 || calls[0].Function.Name != "get_weather" || c.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("message %+v, finish %q: want a call of get_weather", c.Choices[0].Message, c.Choices[0].FinishReason)
		}
	})

	t.Run("a bridge SIGKILLed mid-stream: another one finishes the answer", func(t *testing.T) {
		const tokens = 1500
		s := killMidStream(t, f, r.workers, fmt.Sprintf(`{"model":"demo","stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"keep talking"}]}`, tokens))
		if s.finishReason != "length" || s.usage == nil || s.usage.CompletionTokens != tokens {
			t.Errorf("after the kill: finish %q, usage %+v; want the whole answer (%d tokens) ending with length", s.finishReason, s.usage, tokens)
		}
	})
}

// TestProcessingModes serves the demo model through cmd/worker --engine
// vllm in front of one deterministic mocker in its vLLM API mode, four
// times under four names, one per processing mode: the frontend's
// (default, through the engine's /inference/v1/generate, and again
// through its /v1/completions with --vllm-api completions), the worker's
// detokenizer (--postprocessing worker), and the engine's own chat
// template, tokenizer and text (--vllm-processing).
// With a fixed seed every mode gives the same prompt tokens and the same
// text, /v1/models says which mode each model has, and stop strings
// still cut the text in every mode.
func TestProcessingModes(t *testing.T) {
	c := newCluster(t, "etcd", "nats")
	b, err := json.Marshal(cannedAnswers)
	if err != nil {
		t.Fatal(err)
	}
	canned := filepath.Join(t.TempDir(), "canned.json")
	if err := os.WriteFile(canned, b, 0o644); err != nil {
		t.Fatal(err)
	}
	engine := startVLLMEngine(t, "vllm", append(slices.Clone(deterministic), "--canned-responses", canned)...)
	modes := []struct {
		model, pre, post string
		flags            []string
	}{
		{"demo-frontend", "frontend", "frontend", nil},
		{"demo-completions", "frontend", "frontend", []string{"--vllm-api", "completions"}},
		{"demo-worker", "frontend", "worker", []string{"--postprocessing", "worker"}},
		{"demo-native", "engine", "engine", []string{"--vllm-processing"}},
	}
	var names []string
	workers := map[string]*process{}
	for _, m := range modes {
		args := append([]string{"--engine", "vllm", "--engine-url", engine.url, "--model-path", demoModel,
			"--model-name", m.model, "--endpoint", "dyn://dynamo." + m.model + ".generate", "--engine-start-timeout", "60s"}, c.args...)
		workers[m.model] = startProcess(t, m.model, workerBin, statusListening, append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0"), append(args, m.flags...)...)
		names = append(names, m.model)
	}
	// A worker that runs the output side with parsers of its own.
	parsersArgs := append([]string{"--engine", "vllm", "--engine-url", engine.url, "--model-path", demoModel, "--model-name", "demo-parsers",
		"--endpoint", "dyn://dynamo.demo-parsers.generate", "--engine-start-timeout", "60s", "--postprocessing", "worker",
		"--dyn-tool-call-parser", "hermes", "--dyn-reasoning-parser", "deepseek_r1"}, c.args...)
	startProcess(t, "demo-parsers", workerBin, statusListening, append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0"), parsersArgs...)
	f := c.startFrontend()
	f.waitModels(t, append(names, "demo-parsers")...)

	t.Run("the worker splits reasoning and parses tool calls", func(t *testing.T) {
		body := object{"model": "demo-parsers", "max_tokens": 200, "tools": []any{weatherTool},
			"messages": []object{{"role": "user", "content": "What is the weather in Paris?"}}}
		resp, raw := f.post(t, chatPath, body)
		var r struct {
			Choices []struct {
				Message struct {
					Content          *string `json:"content"`
					ReasoningContent string  `json:"reasoning_content"`
					ToolCalls        []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &r) != nil || len(r.Choices) != 1 {
			t.Fatalf("status %d: %s", resp.StatusCode, raw)
		}
		m := r.Choices[0].Message
		if m.ReasoningContent != "The user wants the weather; I will call the tool." || m.Content == nil || strings.TrimSpace(*m.Content) != "Let me check." ||
			len(m.ToolCalls) != 1 || m.ToolCalls[0].ID == "" || m.ToolCalls[0].Function.Name != "get_weather" ||
			!jsonEqual(m.ToolCalls[0].Function.Arguments, `{"city":"Paris","unit":"celsius"}`) || r.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("answer %s: want the reasoning, the content and one call of get_weather, parsed on the worker", raw)
		}
		// Thinking off (the canned answer has no reasoning block), sent to
		// the worker with the request.
		stream := f.sdk.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
			Model:    "demo-parsers",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Both two cities, please.")},
			Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
		}, option.WithJSONSet("chat_template_args", map[string]any{"enable_thinking": false}))
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if calls := acc.Choices[0].Message.ToolCalls; len(calls) != 2 || calls[0].Function.Name != "get_weather" ||
			!jsonEqual(calls[1].Function.Arguments, `{"city":"Lima"}`) || acc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("streamed message %+v, finish %q: want two calls", acc.Choices[0].Message, acc.Choices[0].FinishReason)
		}
	})

	t.Run("/v1/models says each model's processing", func(t *testing.T) {
		resp, err := f.http.Get(f.url + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list struct {
			Data []struct {
				ID         string `json:"id"`
				Processing struct {
					Pre  string `json:"preprocessing"`
					Post string `json:"postprocessing"`
				} `json:"processing"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		got := map[string][2]string{}
		for _, m := range list.Data {
			got[m.ID] = [2]string{m.Processing.Pre, m.Processing.Post}
		}
		for _, m := range modes {
			if got[m.model] != [2]string{m.pre, m.post} {
				t.Errorf("%s: processing %v, want %s/%s", m.model, got[m.model], m.pre, m.post)
			}
		}
	})

	chat := func(model string, extra object) object {
		req := object{"model": model, "seed": 7, "max_tokens": 40, "stream_options": object{"include_usage": true},
			"messages": []object{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Héllo, which mode am I in? 🙂"}}}
		for k, v := range extra {
			req[k] = v
		}
		return req
	}
	var want streamed
	t.Run("every mode gives the same prompt and text", func(t *testing.T) {
		for i, m := range modes {
			s := f.stream(t, chatPath, chat(m.model, nil))
			if s.text == "" || s.finishReason != "length" || s.usage == nil || s.usage.CompletionTokens != 40 {
				t.Fatalf("%s: text %q, finish %q, usage %+v; want 40 tokens of text ending with length", m.model, s.text, s.finishReason, s.usage)
			}
			ureq := chat(m.model, nil)
			delete(ureq, "stream_options")
			u := f.unary(t, chatPath, ureq)
			if u.text() != s.text {
				t.Errorf("%s: unary text %q, streamed %q", m.model, u.text(), s.text)
			}
			if i == 0 {
				want = s
				continue
			}
			if s.text != want.text || s.usage.PromptTokens != want.usage.PromptTokens {
				t.Errorf("%s: text %q (%d prompt tokens), want %s's %q (%d)", m.model, s.text, s.usage.PromptTokens, modes[0].model, want.text, want.usage.PromptTokens)
			}
		}
		// The native model's prompts came from the engine, through its
		// worker's tokenize endpoint: one per request.
		if v, _ := workers["demo-native"].scrape(t).value("dynamo_component_requests_total", `dynamo_endpoint="tokenize"`); v < 2 {
			t.Errorf("demo-native's worker answered %v tokenize requests, want one per request (at least 2)", v)
		}
	})

	t.Run("stop strings cut the text in every mode", func(t *testing.T) {
		if len(want.text) < 12 {
			t.Skip("no answer to cut")
		}
		runes := []rune(want.text)
		stop := string(runes[len(runes)/2 : len(runes)/2+3])
		cut := want.text[:strings.Index(want.text, stop)]
		for _, m := range modes {
			s := f.stream(t, chatPath, chat(m.model, object{"stop": []string{stop}}))
			if s.text != cut || s.finishReason != "stop" {
				t.Errorf("%s with stop %q: text %q, finish %q; want %q, stop", m.model, stop, s.text, s.finishReason, cut)
			}
		}
	})
}

// TestProcessingModesMigrate kills the worker serving a stream in the
// worker and engine processing modes: the answer moves to the model's
// other worker (the token ids still travel) and the client reads the same
// text as an answer nobody interrupted (deterministic engines: a token is
// a function of the seed and its position).
func TestProcessingModesMigrate(t *testing.T) {
	c := newCluster(t, "etcd", "nats")
	slow := []string{"--deterministic", "--speedup-ratio", "10"}
	engines := []*vllmEngine{startVLLMEngine(t, "vllm-1", slow...), startVLLMEngine(t, "vllm-2", slow...)}
	modes := []struct {
		model string
		flags []string
	}{
		{"demo-worker", []string{"--postprocessing", "worker"}},
		{"demo-native", []string{"--vllm-processing"}},
	}
	workers := map[string][]*worker{}
	var names []string
	for _, m := range modes {
		for i, e := range engines {
			args := append([]string{"--engine", "vllm", "--engine-url", e.url, "--model-path", demoModel, "--model-name", m.model,
				"--endpoint", "dyn://dynamo." + m.model + ".generate", "--engine-start-timeout", "60s", "--migration-limit", "2"}, c.args...)
			p := startProcess(t, fmt.Sprintf("%s-%d", m.model, i+1), workerBin, statusListening,
				append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0", kvLeaseTTL), append(args, m.flags...)...)
			workers[m.model] = append(workers[m.model], &worker{process: p})
		}
		names = append(names, m.model)
	}
	f := c.startFrontend()
	f.waitModels(t, names...)
	const tokens = 1200
	body := func(model string) string {
		return fmt.Sprintf(`{"model":%q,"seed":3,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Tell me everything, é 🙂"}]}`, model, tokens)
	}
	for _, m := range modes {
		t.Run(m.model, func(t *testing.T) {
			var req object
			if err := json.Unmarshal([]byte(body(m.model)), &req); err != nil {
				t.Fatal(err)
			}
			want := f.stream(t, chatPath, req)
			got := killMidStream(t, f, workers[m.model], body(m.model))
			if got.finishReason != "length" || got.usage == nil || got.usage.CompletionTokens != tokens || got.text != want.text {
				t.Errorf("after the kill: finish %q, usage %+v, text equal to the uninterrupted answer: %v", got.finishReason, got.usage, got.text == want.text)
			}
			if v, _ := f.scrape(t).value("dynamo_frontend_model_migration_total", fmt.Sprintf("model=%q", m.model), `migration_type="ongoing_request"`); v != 1 {
				t.Errorf("model_migration_total{ongoing_request} = %v, want 1: the stream should have moved", v)
			}
		})
	}
}

// TestEngineCrashMidStream SIGKILLs the engine (the mocker in its vLLM
// API mode) behind the worker serving a stream, the worker itself left
// running: the worker's engine stream breaks (StreamIncomplete), the
// frontend moves the request to the other worker with the tokens so far,
// and the client reads the same text as an answer nobody interrupted
// (deterministic engines).
func TestEngineCrashMidStream(t *testing.T) {
	c := newCluster(t, "etcd", "nats")
	slow := []string{"--deterministic", "--speedup-ratio", "10"}
	engines := []*vllmEngine{startVLLMEngine(t, "vllm-1", slow...), startVLLMEngine(t, "vllm-2", slow...)}
	var workers []*worker
	behind := map[*worker]*vllmEngine{}
	for i, e := range engines {
		w := c.startBridge(fmt.Sprintf("bridge-%d", i+1), e, "--migration-limit", "2")
		workers = append(workers, w)
		behind[w] = e
	}
	f := c.startFrontend()
	f.waitModels(t, "demo")
	const tokens = 1200
	body := fmt.Sprintf(`{"model":"demo","seed":5,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Tell me a long story."}]}`, tokens)
	var req object
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	want := f.stream(t, chatPath, req)
	got := interruptMidStream(t, f, workers, body, func(w *worker) { behind[w].kill() })
	if got.finishReason != "length" || got.usage == nil || got.usage.CompletionTokens != tokens || got.text != want.text {
		t.Errorf("after the engine's kill: finish %q, usage %+v, text equal to the uninterrupted answer: %v", got.finishReason, got.usage, got.text == want.text)
	}
	if v, _ := f.scrape(t).value("dynamo_frontend_model_migration_total", `model="demo"`, `migration_type="ongoing_request"`); v < 1 {
		t.Errorf("model_migration_total{ongoing_request} = %v, want the stream to have moved", v)
	}
}

// killMidStream sends body (a streamed chat request) through f, SIGKILLs
// the one of workers that serves it after its first chunks, reads the
// stream to its end and returns it reassembled.
func killMidStream(t *testing.T, f *frontend, workers []*worker, body string) streamed {
	t.Helper()
	return interruptMidStream(t, f, workers, body, func(w *worker) { w.kill() })
}

// interruptMidStream sends body (a streamed chat request) through f,
// calls interrupt with the one of workers that serves it after its first
// chunks, reads the stream to its end and returns it reassembled.
func interruptMidStream(t *testing.T, f *frontend, workers []*worker, body string, interrupt func(*worker)) streamed {
	t.Helper()
	served := func() map[*worker]float64 {
		out := map[*worker]float64{}
		for _, w := range workers {
			v, _ := w.scrape(t).value("dynamo_component_requests_total", generateEndpoint)
			out[w] = v
		}
		return out
	}
	before := served()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url+chatPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for len(events) < 5 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events = append(events, sc.Text())
		}
	}
	var victim *worker
	for w, n := range served() {
		if n > before[w] {
			victim = w
		}
	}
	if victim == nil {
		t.Fatal("no worker's request count moved")
	}
	interrupt(victim)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") || strings.HasPrefix(sc.Text(), "event: ") {
			events = append(events, sc.Text())
		}
	}
	return reassemble(t, chatPath, []byte(strings.Join(events, "\n\n")+"\n\n"))
}
