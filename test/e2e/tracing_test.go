package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// TestTracing runs the stack with OpenTelemetry export on, into an
// in-process OTLP receiver (the frontend over gRPC, the workers over
// HTTP), on both request planes, and reads the traces back:
//
//   - a request that continues the client's traceparent is one trace from
//     the HTTP span to engine.generate on the worker, every parent/child
//     link intact and the engine span's attributes sane;
//   - a request whose worker is killed mid-stream shows two attempts and
//     two engine spans in one trace, the later ones linked to the earlier
//     ones;
//   - a frontend with export off writes JSON log lines that carry the
//     request's trace id (the client's) and request id.
func TestTracing(t *testing.T) {
	for _, plane := range []string{"tcp", "nats"} {
		t.Run(plane, func(t *testing.T) { testTracing(t, plane) })
	}
}

func testTracing(t *testing.T, plane string) {
	otlp := testenv.StartOTLP(t)
	common := []string{"OTEL_EXPORT_ENABLED=1", "OTEL_BSP_SCHEDULE_DELAY=50"}
	frontendEnv := append([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + otlp.GRPCEndpoint(), "OTEL_EXPORTER_OTLP_INSECURE=true",
		"DYN_ORPHANED_STREAM_TIMEOUT_SECS=1",
	}, common...)
	workerEnv := append([]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.HTTPEndpoint(),
		"OTEL_SERVICE_NAME=worker",
	}, common...)

	r := &migrationRig{c: newCluster(t, "etcd", plane)}
	for range 3 {
		r.started++
		w := &worker{process: r.c.startMocker(fmt.Sprintf("mocker-%d", r.started), migrationMocker, append(migrationMockerEnv, workerEnv...)...)}
		r.workers = append(r.workers, w)
	}
	r.mig = r.c.startFrontendArgs([]string{"--migration-limit", "3"}, frontendEnv...)
	// Export off, JSON logs.
	r.off = r.c.startFrontendArgs([]string{"--migration-limit", "3"}, "DYN_LOGGING_JSONL=1", "DYN_ORPHANED_STREAM_TIMEOUT_SECS=1")
	for _, f := range []*frontend{r.mig, r.off} {
		f.waitModels(t, "demo")
	}
	r.waitInstances(t)

	t.Run("one trace from HTTP to the engine", func(t *testing.T) {
		const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		h := http.Header{"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-01"}}
		s := r.mig.startStreamHeaders(t, chatPath, streamRequest(chatPath, "Trace me.", 3, 20), h)
		s.finish(t, 30*time.Second)
		// The worker's runtime.handle ends after its engine.generate and
		// may be exported in a later batch: wait for every span asserted.
		spans := otlp.WaitFor(t, 10*time.Second, func(all []testenv.Span) bool {
			return len(testenv.Named(testenv.InTrace(all, clientTrace), "engine.generate")) == 1 &&
				len(testenv.Named(testenv.InTrace(all, clientTrace), "runtime.handle")) == 1 &&
				len(testenv.Named(testenv.InTrace(all, clientTrace), "POST "+chatPath)) == 1
		})
		tr := testenv.InTrace(spans, clientTrace)
		server := one(t, tr, "POST "+chatPath)
		if server.ParentSpanID != clientSpan || server.Kind != "server" || server.Service != "frontend" {
			t.Fatalf("server span %v: want a server span of service frontend under the client's %s", server, clientSpan)
		}
		want := map[string]any{"http.request.method": "POST", "http.route": chatPath, "model": "demo", "http.response.status_code": int64(200), "stream": true}
		checkAttrs(t, server, want)
		if id, _ := server.Attrs["x_request_id"].(string); id == "" {
			t.Errorf("server span without x_request_id: %v", server)
		}
		pre := childOf(t, tr, server, "preprocess")
		childOf(t, tr, pre, "template.render")
		tok := childOf(t, tr, pre, "tokenize")
		if n, _ := tok.Attrs["token_count"].(int64); n <= 0 || pre.Attrs["input_tokens"] != n {
			t.Errorf("tokenize token_count %v, preprocess input_tokens %v: want the same positive count", tok.Attrs["token_count"], pre.Attrs["input_tokens"])
		}
		attempt := childOf(t, tr, server, "migration.attempt")
		route := childOf(t, tr, attempt, "route")
		if route.Attrs["router.policy"] != "round_robin" || route.Attrs["worker.instance_id"] == nil {
			t.Errorf("route span %v: want policy round_robin and the instance", route)
		}
		handle := childOf(t, tr, route, "runtime.handle")
		if handle.Service != "worker" || handle.Kind != "server" || handle.Attrs["x_request_id"] != server.Attrs["x_request_id"] {
			t.Errorf("runtime.handle %v: want a server span of service worker with the request's id", handle)
		}
		if id := fmt.Sprint(route.Attrs["worker.instance_id"]); !strings.Contains(handle.Attrs["endpoint"].(string), "generate") || id == "" {
			t.Errorf("runtime.handle endpoint %v", handle.Attrs["endpoint"])
		}
		engine := childOf(t, tr, handle, "engine.generate")
		checkAttrs(t, engine, map[string]any{"model": "demo", "output_tokens": int64(20), "finish_reason": "length", "cancelled": false, "disagg_role": "aggregated"})
		if n, _ := engine.Attrs["input_tokens"].(int64); n != pre.Attrs["input_tokens"] {
			t.Errorf("engine input_tokens %v, preprocess %v", engine.Attrs["input_tokens"], pre.Attrs["input_tokens"])
		}
		for _, k := range []string{"ttft_ms", "avg_itl_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms"} {
			if v, ok := engine.Attrs[k].(float64); !ok || v < 0 || v > 10000 {
				t.Errorf("engine.generate %s = %v: want a number of milliseconds", k, engine.Attrs[k])
			}
		}
		for _, sp := range []testenv.Span{server, pre, attempt, route, handle, engine} {
			if sp.StatusCode == testenv.StatusError {
				t.Errorf("span %s has an error status on a request that succeeded: %s", sp.Name, sp.StatusMessage)
			}
		}
	})

	t.Run("a new trace without traceparent", func(t *testing.T) {
		otlp.Reset()
		r.mig.streamAll(t, chatPath, streamRequest(chatPath, "No parent.", 4, 5))
		spans := otlp.WaitFor(t, 10*time.Second, func(all []testenv.Span) bool {
			return len(testenv.Named(all, "engine.generate")) == 1 && len(testenv.Named(all, "POST "+chatPath)) == 1
		})
		server, engine := one(t, spans, "POST "+chatPath), one(t, spans, "engine.generate")
		if server.ParentSpanID != "" || engine.TraceID != server.TraceID {
			t.Fatalf("server span %v and engine span %v: want a root span and the engine in its trace", server, engine)
		}
	})

	t.Run("a migrated request: attempts and engine spans linked", func(t *testing.T) {
		otlp.Reset()
		const clientTrace = "0af7651916cd43dd8448eb211c80319c"
		h := http.Header{"Traceparent": {"00-" + clientTrace + "-b7ad6b7169203331-01"}}
		s := r.mig.startStreamHeaders(t, chatPath, streamRequest(chatPath, "Tell me a long story about yourself.", 1, longAnswer), h)
		s.waitContent(t, 30)
		w := r.serving(t)
		w.kill()
		s.finish(t, 30*time.Second)
		spans := otlp.WaitFor(t, 15*time.Second, func(all []testenv.Span) bool {
			tr := testenv.InTrace(all, clientTrace)
			return len(testenv.Named(tr, "migration.attempt")) == 2 && len(testenv.Named(tr, "engine.generate")) >= 1 &&
				len(testenv.Named(tr, "POST "+chatPath)) == 1
		})
		tr := testenv.InTrace(spans, clientTrace)
		attempts := testenv.Named(tr, "migration.attempt")
		first, second := attempts[0], attempts[1]
		if first.Attrs["migration.attempt"] != int64(1) {
			first, second = second, first
		}
		if first.StatusCode != testenv.StatusError || second.Attrs["migration.attempt"] != int64(2) {
			t.Errorf("attempts %v and %v: want the first failed, the second numbered 2", first, second)
		}
		if len(second.Links) != 1 || second.Links[0].SpanID != first.SpanID {
			t.Errorf("the second attempt links to %v, want the first attempt %s", second.Links, first.SpanID)
		}
		// The killed worker never exported its engine span; the new one
		// names it, and it is the one the first attempt's route reached.
		engine := one(t, tr, "engine.generate")
		if len(engine.Links) != 1 || engine.Links[0].TraceID != clientTrace {
			t.Fatalf("the new engine span's links %v: want one into the trace", engine.Links)
		}
		if engine.Attrs["migration_span_id"] != engine.Links[0].SpanID || engine.Attrs["migration_trace_id"] != clientTrace {
			t.Errorf("migration_trace_id/span_id %v/%v, link %v", engine.Attrs["migration_trace_id"], engine.Attrs["migration_span_id"], engine.Links[0])
		}
		if got := ancestorNamed(tr, engine, "migration.attempt"); got.SpanID != second.SpanID {
			t.Errorf("the new engine span is under attempt %v, want the second", got)
		}
		r.replace(t, w)
	})

	t.Run("export off: log lines carry the trace", func(t *testing.T) {
		const clientTrace = "5b8efff798038103d269b633813fc60c"
		h := http.Header{"Traceparent": {"00-" + clientTrace + "-eee19b7ec3c1b174-01"}}
		s := r.off.startStreamHeaders(t, chatPath, streamRequest(chatPath, "Tell me a long story about yourself.", 2, longAnswer), h)
		s.waitContent(t, 30)
		w := r.serving(t)
		w.kill()
		s.finish(t, 30*time.Second)
		defer r.replace(t, w)
		var lines []map[string]any
		r.off.waitFor(t, 10*time.Second, "the migration's log lines", func() bool {
			lines = lines[:0]
			for _, l := range strings.Split(r.off.log.String(), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["trace_id"] == clientTrace {
					lines = append(lines, m)
				}
			}
			return len(lines) >= 2
		})
		id := lines[0]["x_request_id"]
		for _, l := range lines {
			if l["x_request_id"] != id || id == nil || l["span_id"] == nil {
				t.Errorf("log line %v: want the request id %v and a span id like the others", l, id)
			}
		}
		t.Logf("%d log lines of the request carry trace_id %s: %v", len(lines), clientTrace, lines[0]["msg"])
	})
}

// one returns the only span named name.
func one(t testing.TB, spans []testenv.Span, name string) testenv.Span {
	t.Helper()
	got := testenv.Named(spans, name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1:\n%s", len(got), name, testenv.DumpSpans(spans))
	}
	return got[0]
}

// childOf returns the only child of parent named name.
func childOf(t testing.TB, spans []testenv.Span, parent testenv.Span, name string) testenv.Span {
	t.Helper()
	got := testenv.Named(testenv.ChildrenOf(spans, parent), name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q under %s, want 1:\n%s", len(got), name, parent.Name, testenv.DumpSpans(spans))
	}
	return got[0]
}

// ancestorNamed returns the nearest ancestor of s named name.
func ancestorNamed(spans []testenv.Span, s testenv.Span, name string) testenv.Span {
	byID := map[string]testenv.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	for p, ok := byID[s.ParentSpanID]; ok; p, ok = byID[p.ParentSpanID] {
		if p.Name == name {
			return p
		}
	}
	return testenv.Span{}
}

func checkAttrs(t testing.TB, s testenv.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if s.Attrs[k] != v {
			t.Errorf("%s: %s = %v (%T), want %v (%T)", s.Name, k, s.Attrs[k], s.Attrs[k], v, v)
		}
	}
}
