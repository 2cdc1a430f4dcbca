package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/google/uuid"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// logSink collects the JSON log lines of a logger built as the commands
// build theirs (telemetry.LogHandler over a JSON handler).
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func newLogSink(level slog.Level) (*logSink, *slog.Logger) {
	s := &logSink{}
	return s, slog.New(telemetry.LogHandler(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: level})))
}

// logLine is one decoded line; numbers stay json.Number, so that a
// worker's 64-bit instance id compares exactly.
type logLine map[string]any

func (l logLine) str(k string) string {
	v, _ := l[k].(string)
	return v
}

func (l logLine) num(k string) float64 {
	n, ok := l[k].(json.Number)
	if !ok {
		return -1
	}
	f, _ := n.Float64()
	return f
}

// lines returns the lines logged so far whose msg is msg (any when "")
// and whose x_request_id is id (any when "").
func (s *logSink) lines(t *testing.T, msg, id string) []logLine {
	t.Helper()
	s.mu.Lock()
	data := append([]byte(nil), s.buf.Bytes()...)
	s.mu.Unlock()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []logLine
	for {
		var l logLine
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, data)
		}
		if (msg == "" || l.str("msg") == msg) && (id == "" || l.str("x_request_id") == id) {
			out = append(out, l)
		}
	}
	return out
}

// wait returns the lines of msg and id once there are n of them: a
// request's end is logged after its answer reached the client.
func (s *logSink) wait(t *testing.T, msg, id string, n int) []logLine {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := s.lines(t, msg, id)
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("%d lines %q of request %q, want %d; the log:\n%s", len(got), msg, id, n, s.dump())
			}
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *logSink) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// idEngine is a textEngine that remembers its worker's instance id.
type idEngine struct {
	*textEngine
	id atomic.Uint64
}

func (e *idEngine) Start(ctx context.Context, id uint64) (backend.Config, error) {
	e.id.Store(id)
	return e.textEngine.Start(ctx, id)
}

// addLoggedWorker starts a worker of the demo model that logs to log,
// with its engine spans made by tp.
func (s *stack) addLoggedWorker(t *testing.T, eng backend.Engine, log *slog.Logger, tp *sdktrace.TracerProvider) {
	t.Helper()
	rt := startRuntime(t, s.mem)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, rt, eng, worker.Config{
			Endpoint:  runtime.EndpointID{Namespace: "dynamo", Component: "backend-demo", Name: "generate"},
			ModelPath: demoModel, ModelName: "demo", Logger: log, TracerProvider: tp,
		})
	}()
	s.workers["demo"], s.done["demo"] = cancel, done
	s.waitModels(t, func(ids []string) bool { return contains(ids, "demo") })
}

// postTraced posts body with a traceparent and a request id and returns
// the response.
func (s *stack) postTraced(t *testing.T, path, body, traceparent, requestID string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	if requestID != "" {
		req.Header.Set("x-request-id", requestID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

const (
	traceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
	traceparent = "00-" + traceID + "-" + parentSpan + "-01"
)

// At debug level a request writes an admitted and an ended line on the
// frontend, and an ended line on the worker, each with the request's id
// (its x-request-id), its trace id and the span of the process that
// wrote it; the ends tell how it ended. A request refused before it
// reached a model ends with one line too. Streams on net/http's handler
// and streams that took their connection over log alike.
func TestRequestLinesAtDebug(t *testing.T) {
	for _, at := range []int{-1, 1} {
		t.Run(fmt.Sprintf("DetachStreamsAt=%d", at), func(t *testing.T) {
			sink, log := newLogSink(slog.LevelDebug)
			wsink, wlog := newLogSink(slog.LevelDebug)
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			s := newStackWith(t, Config{DetachStreamsAt: at}, pipeline.Config{}, Deps{Logger: log, TracerProvider: tp})
			eng := &idEngine{textEngine: helloEngine(t, time.Millisecond)}
			wrec := tracetest.NewSpanRecorder()
			s.addLoggedWorker(t, eng, wlog, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(wrec)))
			// engineSpan is the worker's engine.generate span spanID, if any.
			engineSpan := func(spanID string) sdktrace.ReadOnlySpan {
				for _, sp := range wrec.Ended() {
					if sp.Name() == "engine.generate" && sp.SpanContext().SpanID().String() == spanID {
						return sp
					}
				}
				return nil
			}

			// serverSpan is the frontend's span of request id.
			serverSpan := func(id string) sdktrace.ReadOnlySpan {
				t.Helper()
				for _, sp := range rec.Ended() {
					for _, a := range sp.Attributes() {
						if a.Key == "x_request_id" && a.Value.AsString() == id {
							return sp
						}
					}
				}
				t.Fatalf("no server span of request %s", id)
				return nil
			}
			for _, c := range []struct {
				name, body string
				stream     bool
			}{
				{"stream", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`, true},
				{"unary", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					sent := uuid.NewString()
					r := s.postTraced(t, "/v1/chat/completions", c.body, traceparent, sent)
					id := r.header.Get("x-request-id")
					if r.status != 200 || id != sent {
						t.Fatalf("status %d, x-request-id %q (sent %q): %s", r.status, id, sent, r.body)
					}
					end := sink.wait(t, "frontend: request ended", id, 1)[0]
					adm := sink.wait(t, "frontend: request admitted", id, 1)[0]
					span := serverSpan(id)
					if span.Parent().SpanID().String() != parentSpan {
						t.Errorf("server span's parent %s, want the traceparent's %s", span.Parent().SpanID(), parentSpan)
					}
					for _, l := range []logLine{adm, end} {
						if l.str("level") != "DEBUG" || l.str("trace_id") != traceID || l.str("span_id") != span.SpanContext().SpanID().String() {
							t.Errorf("%s: level %s trace %s span %s; want DEBUG, the traceparent's trace %s and the server span %s",
								l.str("msg"), l.str("level"), l.str("trace_id"), l.str("span_id"), traceID, span.SpanContext().SpanID())
						}
						if l.str("model") != "demo" || l.str("endpoint") != EndpointChat || l["stream"] != c.stream {
							t.Errorf("%s: model %v endpoint %v stream %v", l.str("msg"), l["model"], l["endpoint"], l["stream"])
						}
					}
					if end.num("status") != 200 || end.str("finish_reason") != "length" || end.num("completion_tokens") != 5 ||
						end.num("prompt_tokens") <= 0 || end["error"] != nil || end.num("migrations") != 0 {
						t.Errorf("end line %v: want status 200, finish length, 5 completion tokens, some prompt tokens, no error, no migration", end)
					}
					if w, ok := end["worker"].(json.Number); !ok || w.String() != fmt.Sprint(eng.id.Load()) {
						t.Errorf("end line's worker %v, want the instance %d", end["worker"], eng.id.Load())
					}
					if ttft, d := end.num("ttft_ms"), end.num("duration_ms"); !(ttft > 0 && d >= ttft && d < 5000) {
						t.Errorf("end line: ttft %v ms, duration %v ms", ttft, d)
					}

					wend := wsink.wait(t, "worker: request ended", id, 1)[0]
					if es := engineSpan(wend.str("span_id")); wend.str("trace_id") != traceID || es == nil || es.SpanContext().TraceID().String() != traceID {
						t.Errorf("worker's end line: trace %s span %s; want the trace %s and the worker's engine.generate span", wend.str("trace_id"), wend.str("span_id"), traceID)
					}
					if wend.str("model") != "demo" || wend.num("completion_tokens") != 5 || wend.str("finish_reason") != "length" ||
						wend.num("prompt_tokens") != end.num("prompt_tokens") || wend["killed"] != false || wend["stopped"] != false || wend.num("duration_ms") < 0 {
						t.Errorf("worker's end line %v", wend)
					}
				})
			}

			t.Run("refused", func(t *testing.T) {
				r := s.postTraced(t, "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, traceparent, "")
				id := r.header.Get("x-request-id")
				if r.status != 404 || id == "" {
					t.Fatalf("status %d, x-request-id %q", r.status, id)
				}
				end := sink.wait(t, "frontend: request ended", id, 1)[0]
				if end.num("status") != 404 || end.str("error") != ErrNotFound || end.str("model") != UnknownModel || end.str("trace_id") != traceID {
					t.Errorf("end line of a refusal %v", end)
				}
				if adm := sink.lines(t, "frontend: request admitted", id); len(adm) != 0 {
					t.Errorf("a refused request was admitted: %v", adm)
				}
				if info := sink.lines(t, "frontend: request refused", ""); len(info) != 1 || info[0].str("level") != "INFO" {
					t.Errorf("refusal lines at info: %v, want the one of reject", info)
				}
			})
		})
	}
}

// The end line counts the migrations of a request whose worker broke.
func TestRequestEndLineCountsMigrations(t *testing.T) {
	sink, log := newLogSink(slog.LevelDebug)
	limit := 3
	s := newStackWith(t, Config{}, pipeline.Config{MigrationLimit: &limit}, Deps{Logger: log})
	startPositionWorkers(t, s, 1)
	r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":12,"stream":true}`)
	id := r.header.Get("x-request-id")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	end := sink.wait(t, "frontend: request ended", id, 1)[0]
	if end.num("migrations") != 1 || end.num("completion_tokens") != 12 || end.str("finish_reason") != "length" {
		t.Errorf("end line %v: want 1 migration, 12 tokens, finish length", end)
	}
}

// With the access log, every request writes one info line when it ends
// (a /v1 request's with its ids, model and tokens); without it, at info
// level, a healthy request writes none.
func TestAccessLog(t *testing.T) {
	for _, at := range []int{-1, 1} {
		t.Run(fmt.Sprintf("DetachStreamsAt=%d", at), func(t *testing.T) {
			sink, log := newLogSink(slog.LevelInfo)
			s := newStackWith(t, Config{DetachStreamsAt: at, AccessLog: true}, pipeline.Config{}, Deps{Logger: log})
			s.addWorker(t, "demo", helloEngine(t, 0))

			stream := s.postTraced(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`, traceparent, "")
			unary := s.postTraced(t, "/v1/completions", `{"model":"demo","prompt":"hi","max_tokens":3}`, "", "")
			refused := s.postTraced(t, "/v1/chat/completions", `{"model":"demo","messages":[]`, "", "")
			health := s.get(t, "/health")
			if stream.status != 200 || unary.status != 200 || refused.status != 400 || health.status != 200 {
				t.Fatalf("statuses %d %d %d %d", stream.status, unary.status, refused.status, health.status)
			}
			for _, c := range []struct {
				r          response
				path       string
				status     int
				completion float64
			}{{stream, "/v1/chat/completions", 200, 5}, {unary, "/v1/completions", 200, 3}, {refused, "/v1/chat/completions", 400, 0}} {
				id := c.r.header.Get("x-request-id")
				l := sink.wait(t, "frontend: access", id, 1)[0]
				if l.str("level") != "INFO" || l.str("method") != "POST" || l.str("path") != c.path || l.num("status") != float64(c.status) ||
					l.num("bytes") != float64(len(c.r.body)) || !strings.HasPrefix(l.str("remote_addr"), "127.0.0.1:") ||
					l.num("completion_tokens") != c.completion || l.num("duration_ms") < 0 {
					t.Errorf("access line of %s (%d bytes): %v", c.path, len(c.r.body), l)
				}
			}
			if l := sink.lines(t, "frontend: access", stream.header.Get("x-request-id"))[0]; l.str("trace_id") != traceID || l.str("model") != "demo" || l.num("prompt_tokens") <= 0 {
				t.Errorf("the stream's access line lacks its trace or model: %v", l)
			}
			// One line per request in all; /health's has no request id.
			// (The stack's own GET /v1/models while it waited for the
			// worker have theirs too.)
			byPath := func() map[string][]logLine {
				m := map[string][]logLine{}
				for _, l := range sink.lines(t, "frontend: access", "") {
					m[l.str("path")] = append(m[l.str("path")], l)
				}
				return m
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(byPath()["/health"]) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			paths := byPath()
			if len(paths["/v1/chat/completions"]) != 2 || len(paths["/v1/completions"]) != 1 || len(paths["/health"]) != 1 || len(paths["/v1/models"]) == 0 {
				t.Fatalf("access lines by path %v, want 2 chat, 1 completion, 1 health and the stack's model lists:\n%s", paths, sink.dump())
			}
			if h := paths["/health"][0]; h.str("method") != "GET" || h.num("status") != 200 || h.num("bytes") != float64(len(health.body)) || h["x_request_id"] != nil {
				t.Errorf("access line of /health: %v", h)
			}
			for _, l := range sink.lines(t, "", "") {
				if l.str("level") == "DEBUG" || strings.Contains(l.str("msg"), "request admitted") || strings.Contains(l.str("msg"), "request ended") {
					t.Errorf("a debug line at info level: %v", l)
				}
			}
		})
	}

	t.Run("off", func(t *testing.T) {
		sink, log := newLogSink(slog.LevelInfo)
		s := newStackWith(t, Config{}, pipeline.Config{}, Deps{Logger: log})
		s.addWorker(t, "demo", helloEngine(t, 0))
		r := s.postTraced(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`, traceparent, "")
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		s.get(t, "/health")
		time.Sleep(50 * time.Millisecond) // an end line would be written by now
		if got := sink.lines(t, "", r.header.Get("x-request-id")); len(got) != 0 {
			t.Errorf("lines of a healthy request at info without the access log: %v", got)
		}
		if got := sink.lines(t, "frontend: access", ""); len(got) != 0 {
			t.Errorf("access lines with the access log off: %v", got)
		}
	})
}
