package e2e

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// TestTwoModels serves two models from two mocker processes, checks that
// each request reaches the worker of its model, then kills one worker the
// way a crash would and checks that its model goes away.
func TestTwoModels(t *testing.T) {
	c := newCluster(t, "etcd", "tcp")
	workers := map[string]*process{}
	for _, name := range []string{"demo-a", "demo-b"} {
		workers[name] = c.startMocker(name, append([]string{"--model-name", name,
			// Each model on its own endpoint: the frontend routes a
			// model's requests to every instance of the model's endpoint.
			"--endpoint", "dyn://dynamo." + name + ".generate"}, deterministic...))
	}
	f := c.startFrontend()
	f.waitModels(t, "demo-a", "demo-b")

	served := func(name string) float64 {
		v, _ := workers[name].scrape(t).value("dynamo_component_requests_total", generateEndpoint)
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
		workers["demo-b"].kill()
		start := time.Now()
		f.waitFor(t, 20*time.Second, "/v1/models to list only demo-a after SIGKILL of demo-b's only worker", func() bool {
			return slices.Equal(f.modelIDs(t), []string{"demo-a"})
		})
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
