package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// TestDisaggregation serves one model with a prefill worker and two decode
// workers (etcd, both request planes; the bootstrap handoff on tcp, the
// synchronous one on nats), every process exporting its traces into an
// in-process OTLP receiver, which shows what each worker generated:
//
//   - streamed chat through the official SDK is prefilled on the prefill
//     worker (exactly one generated token there) and decoded on a decode
//     worker, and the answer names both workers;
//   - killing the decode worker mid-stream loses and duplicates no token;
//   - a client that disconnects during a (slow) prefill stops the prefill
//     on the worker;
//   - removing the last prefill worker falls back to decode-only without a
//     failed request.
func TestDisaggregation(t *testing.T) {
	for _, c := range []struct{ plane, handoff string }{{"tcp", "bootstrap"}, {"nats", "synchronous"}} {
		t.Run(c.plane+"/"+c.handoff, func(t *testing.T) { testDisaggregation(t, c.plane, c.handoff == "bootstrap") })
	}
}

func testDisaggregation(t *testing.T, plane string, bootstrap bool) {
	otlp := testenv.StartOTLP(t)
	traces := []string{"OTEL_EXPORT_ENABLED=1", "OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.HTTPEndpoint()}
	r := &migrationRig{c: newCluster(t, "etcd", plane)}
	prefillArgs := append([]string{"--disaggregation-mode", "prefill"}, migrationMocker...)
	if bootstrap {
		prefillArgs = append(prefillArgs, "--bootstrap-ports", "0")
	}
	startPrefill := func(name string, extra ...string) *worker {
		env := append(append(append([]string{}, migrationMockerEnv...), traces...), "OTEL_SERVICE_NAME="+name)
		return &worker{process: r.c.startMocker(name, append(append([]string{}, prefillArgs...), extra...), env...)}
	}
	prefill := startPrefill("prefill-1")
	for i := range 2 {
		env := append(append(append([]string{}, migrationMockerEnv...), traces...), "OTEL_SERVICE_NAME=decode")
		r.started++
		r.workers = append(r.workers, &worker{process: r.c.startMocker(fmt.Sprintf("decode-%d", i+1), append([]string{"--disaggregation-mode", "decode"}, migrationMocker...), env...)})
	}
	// The frontend exports too: it makes the sampling decision, which the
	// workers follow (parent-based).
	r.mig = r.c.startFrontendArgs([]string{"--migration-limit", "3"}, append([]string{"DYN_ORPHANED_STREAM_TIMEOUT_SECS=1", "OTEL_SERVICE_NAME=frontend"}, traces...)...)
	r.mig.waitModels(t, "demo")
	for _, w := range append([]*worker{prefill}, r.workers...) {
		w.waitServing(t, 20*time.Second)
	}
	waitPrefillPool(t, r.mig, prefill.id)

	t.Run("prefill there, decode here", func(t *testing.T) {
		otlp.Reset()
		sdk := openai.NewClient(option.WithBaseURL(r.mig.url+"/v1"), option.WithAPIKey("x"), option.WithHTTPClient(r.mig.http), option.WithMaxRetries(0))
		const n, maxTokens = 4, 30
		for i := range n {
			stream := sdk.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
				Model:     "demo",
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Disaggregate request %d, please.", i))},
				MaxTokens: openai.Int(maxTokens),
			})
			var text strings.Builder
			chunks := 0
			for stream.Next() {
				c := stream.Current()
				if len(c.Choices) > 0 {
					text.WriteString(c.Choices[0].Delta.Content)
					chunks++
				}
			}
			if err := stream.Err(); err != nil || chunks == 0 || text.Len() == 0 {
				t.Fatalf("request %d: %d chunks, %q, %v", i, chunks, text.String(), err)
			}
		}
		// (The probes of waitPrefillPool, 2 tokens each, may still come in.)
		answers := func(spans []testenv.Span) []testenv.Span {
			var out []testenv.Span
			for _, s := range engineSpans(spans, "decode") {
				if s.Attrs["output_tokens"] == int64(maxTokens) {
					out = append(out, s)
				}
			}
			return out
		}
		spans := otlp.WaitFor(t, 15*time.Second, func(all []testenv.Span) bool {
			return len(engineSpans(all, "prefill-1")) >= n && len(answers(all)) == n
		})
		for _, s := range engineSpans(spans, "prefill-1") {
			if s.Attrs["output_tokens"] != int64(1) || s.Attrs["disagg_role"] != "prefill" {
				t.Errorf("prefill worker's engine span: output_tokens %v, role %v; want exactly 1 token on the prefill worker", s.Attrs["output_tokens"], s.Attrs["disagg_role"])
			}
		}
		for _, s := range answers(spans) {
			if s.Attrs["disagg_role"] != "decode" {
				t.Errorf("decode worker's engine span: role %v", s.Attrs["disagg_role"])
			}
		}
		if v, _ := r.mig.scrape(t).value("dynamo_frontend_prefill_decisions_total", `decision="remote"`); v < n {
			t.Errorf("prefill decisions remote = %v, want at least %d", v, n)
		}
	})

	t.Run("decode worker killed mid-stream", func(t *testing.T) {
		req := func() object { return streamRequest(chatPath, "Tell me a long story about yourself.", 1, longAnswer) }
		want := r.mig.streamAll(t, chatPath, req())
		s := r.mig.startStream(t, chatPath, req())
		s.waitContent(t, 30)
		w := r.serving(t)
		w.kill()
		got := reassemble(t, chatPath, s.finish(t, 30*time.Second))
		sameAnswer(t, "stream migrated to the other decode worker", got, want, longAnswer)
		r.workers = removeDead(r.workers, w)
	})

	t.Run("client gone during the prefill", func(t *testing.T) {
		// A prefill worker whose KV transfer takes a minute.
		slow := startPrefill("prefill-slow", "--kv-bytes-per-token", "1000000", "--kv-transfer-bandwidth", "0.000001")
		slow.waitServing(t, 20*time.Second)
		prefill.terminate() // unregisters at once: the slow one is left
		time.Sleep(time.Second)
		decodeBefore := decodeRequests(t, r)
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			body := strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"slow"}],"max_tokens":5,"stream":true}`)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.mig.url+chatPath, body)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := r.mig.http.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		slow.waitFor(t, 10*time.Second, "the prefill to start", func() bool {
			v, _ := slow.scrape(t).value("dynamo_component_inflight_requests", generateEndpoint)
			return v == 1
		})
		cancel()
		start := time.Now()
		slow.waitFor(t, 10*time.Second, "the prefill to stop after the client left", func() bool {
			v, _ := slow.scrape(t).value("dynamo_component_inflight_requests", generateEndpoint)
			return v == 0
		})
		t.Logf("the prefill stopped %v after the client left (its transfer alone would take a minute)", time.Since(start).Round(time.Millisecond))
		if !bootstrap {
			if after := decodeRequests(t, r); after != decodeBefore {
				t.Errorf("decode requests %v -> %v: a decode request was sent for a request whose client left during the prefill", decodeBefore, after)
			}
		}
		prefill = slow
	})

	t.Run("the last prefill worker leaves", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failures []string
		stop := make(chan struct{})
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					body := fmt.Sprintf(`{"model":"demo","messages":[{"role":"user","content":"fallback %d %d"}],"max_tokens":8}`, i, j)
					resp, err := r.mig.http.Post(r.mig.url+chatPath, "application/json", strings.NewReader(body))
					if err == nil {
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							err = fmt.Errorf("%d: %s", resp.StatusCode, b)
						}
					}
					if err != nil {
						mu.Lock()
						failures = append(failures, err.Error())
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		prefill.terminate() // the slow one: its requests are still in flight
		r.mig.waitFor(t, 20*time.Second, "requests to fall back to decode-only", func() bool {
			v, _ := r.mig.scrape(t).value("dynamo_frontend_prefill_decisions_total", `decision="fallback"`)
			return v > 0
		})
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("%d requests failed while the last prefill worker left, e.g. %s", len(failures), failures[0])
		}
	})
}

// engineSpans returns the engine.generate spans of one service.
func engineSpans(spans []testenv.Span, service string) []testenv.Span {
	var out []testenv.Span
	for _, s := range testenv.Named(spans, "engine.generate") {
		if s.Service == service {
			out = append(out, s)
		}
	}
	return out
}

// waitPrefillPool waits until the frontend prefills on the prefill worker
// id (query_instance_id names it).
func waitPrefillPool(t testing.TB, f *frontend, id uint64) {
	t.Helper()
	f.waitFor(t, 20*time.Second, fmt.Sprintf("the frontend to prefill on %x", id), func() bool {
		resp, body := f.post(t, chatPath, []byte(`{"model":"demo","messages":[{"role":"user","content":"where"}],"max_tokens":2,"nvext":{"extra_fields":["worker_id"]}}`))
		if resp.StatusCode != http.StatusOK {
			return false
		}
		var out struct {
			NvExt struct {
				WorkerID struct {
					Prefill uint64 `json:"prefill_worker_id"`
					Decode  uint64 `json:"decode_worker_id"`
				} `json:"worker_id"`
			} `json:"nvext"`
		}
		return json.Unmarshal(body, &out) == nil && out.NvExt.WorkerID.Prefill == id && out.NvExt.WorkerID.Decode != id
	})
}

// decodeRequests is how many requests the live decode workers accepted.
func decodeRequests(t testing.TB, r *migrationRig) float64 {
	var n float64
	for _, w := range r.workers {
		v, _ := w.scrape(t).value("dynamo_component_requests_total", generateEndpoint)
		n += v
	}
	return n
}

func removeDead(ws []*worker, dead *worker) []*worker {
	var out []*worker
	for _, w := range ws {
		if w != dead {
			out = append(out, w)
		}
	}
	return out
}
