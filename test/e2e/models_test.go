package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// TestTwoModels serves two models from two mocker processes, checks that
// each request reaches the worker of its model, then kills one worker the
// way a crash would and checks that its model goes away.
func TestTwoModels(t *testing.T) {
	c := newCluster(t, "etcd", "tcp")
	type worker struct {
		proc    *process
		metrics string // the worker's /metrics URL
	}
	workers := map[string]*worker{}
	for _, name := range []string{"demo-a", "demo-b"} {
		port := testenv.FreePort(t)
		workers[name] = &worker{
			proc: c.startMocker(name, append([]string{"--model-name", name,
				// Each model on its own endpoint: the frontend routes a
				// model's requests to every instance of the model's
				// endpoint.
				"--endpoint", "dyn://dynamo." + name + ".generate"}, deterministic...),
				fmt.Sprintf("DYN_SYSTEM_PORT=%d", port)),
			metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port),
		}
	}
	f := c.startFrontend()
	f.waitModels(t, "demo-a", "demo-b")

	served := func(name string) float64 {
		v, _ := scrape(t, f.http, workers[name].metrics).value("dynamo_component_requests_total", generateEndpoint)
		return v
	}
	t.Run("each model answers from its own worker", func(t *testing.T) {
		for _, name := range []string{"demo-a", "demo-b", "demo-a"} {
			a, b := served("demo-a"), served("demo-b")
			r := f.unary(t, "/v1/chat/completions", userChat(name, "Hi", 4))
			if r.Model != name || r.text() == "" {
				t.Errorf("asked %s: model %q text %q", name, r.Model, r.text())
			}
			da, db := served("demo-a")-a, served("demo-b")-b
			if want := map[string][2]float64{"demo-a": {1, 0}, "demo-b": {0, 1}}[name]; da != want[0] || db != want[1] {
				t.Errorf("asked %s: demo-a's worker served %v requests, demo-b's %v", name, da, db)
			}
			c, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
				Model: name, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}, MaxTokens: openai.Int(4),
			})
			if err != nil || c.Model != name {
				t.Errorf("SDK asked %s: err %v, model %q", name, err, c.Model)
			}
		}
	})

	t.Run("killed worker's model goes away", func(t *testing.T) {
		workers["demo-b"].proc.kill()
		start := time.Now()
		var ids []string
		for ids = f.modelIDs(t); !slices.Equal(ids, []string{"demo-a"}); ids = f.modelIDs(t) {
			if time.Since(start) > 20*time.Second {
				t.Fatalf("20s after SIGKILL of demo-b's only worker, /v1/models lists %v", ids)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("demo-b left /v1/models %s after SIGKILL", time.Since(start).Round(100*time.Millisecond))

		resp, body := f.post(t, "/v1/chat/completions", userChat("demo-b", "Hi", 4))
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("demo-b after its worker died: %d %s, want 404", resp.StatusCode, body)
		}
		if e := decodeError(t, resp.StatusCode, body); !strings.Contains(e.Message, "demo-b") {
			t.Errorf("404 message %q does not name the model", e.Message)
		}
		_, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: "demo-b", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
		})
		if apiErr := (*openai.Error)(nil); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
			t.Errorf("SDK, demo-b after its worker died: err %v, want status 404", err)
		}
		if r := f.unary(t, "/v1/chat/completions", userChat("demo-a", "Hi", 4)); r.Model != "demo-a" || r.text() == "" {
			t.Errorf("demo-a after demo-b died: %+v", r)
		}
	})
}
