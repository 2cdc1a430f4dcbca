package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// TestResponsesStoredNATS shares conversations between two frontends
// through one NATS JetStream bucket; with NATS stopped, what needs the
// store gets 503 and stateless requests are served.
func TestResponsesStoredNATS(t *testing.T) {
	js := testenv.StartNATSWith(t, testenv.NATSOptions{JetStream: true})
	c := newCluster(t, "file", "tcp")
	c.startMocker("mocker", deterministic)
	args := []string{"--responses-store", "nats"}
	a := c.startFrontendArgs(args, "NATS_SERVER="+js.URL)
	b := c.startFrontendArgs(args, "NATS_SERVER="+js.URL)
	a.waitModels(t, "demo")
	b.waitModels(t, "demo")
	ctx := t.Context()

	first := turn(t, a, "", "Name a French city.", 6)
	second := turn(t, b, first.ID, "Name another one.", 6)
	prompt, third := formattedPrompt(t, a, second.ID, "And a third?")
	for _, want := range []string{"Name a French city.", first.OutputText(), "Name another one.", second.OutputText()} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the third turn (frontend a) lacks %q of the turns on a and b:\n%s", want, prompt)
		}
	}
	if r, err := b.sdk.Responses.Get(ctx, third, responses.ResponseGetParams{}); err != nil || r.ID != third {
		t.Errorf("frontend b retrieves a's response: %v %v", r, err)
	}

	js.Stop()
	storeDown(t, a, second.ID)
}

// TestResponsesStoreUnwritable gives the embedded store a data directory
// that cannot be made: what needs the store gets 503, the rest is served.
func TestResponsesStoreUnwritable(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "file", "tcp")
	c.startMocker("mocker", deterministic)
	f := c.startFrontend("DYN_RESPONSES_DATA_DIR=" + filepath.Join(notDir, "responses"))
	f.waitModels(t, "demo")
	storeDown(t, f, "resp_any")
}

// storeDown checks a frontend whose store is down: previous_response_id,
// GET and background get 503 with Retry-After in OpenAI's error shape; a
// stored request is answered (its write counted as failed); store:false
// is answered.
func storeDown(t *testing.T, f *frontend, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for name, err := range map[string]error{
		"previous_response_id": func() error {
			_, err := f.sdk.Responses.New(ctx, responses.ResponseNewParams{Model: "demo", PreviousResponseID: openai.String(id),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			return err
		}(),
		"GET": func() error { _, err := f.sdk.Responses.Get(ctx, id, responses.ResponseGetParams{}); return err }(),
		"background": func() error {
			_, err := f.sdk.Responses.New(ctx, responses.ResponseNewParams{Model: "demo", Background: openai.Bool(true),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			return err
		}(),
	} {
		var e *openai.Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusServiceUnavailable || e.Response.Header.Get("Retry-After") == "" || !strings.Contains(e.Message, "unavailable") {
			t.Errorf("%s with the store down: %v, want 503 with Retry-After saying the store is unavailable", name, err)
		}
	}
	stored := turn(t, f, "", "hi", 4)
	if stored.OutputText() == "" {
		t.Errorf("a stored request with the store down answered %s", stored.RawJSON())
	}
	if v, ok := f.scrape(t).value("dynamo_frontend_responses_store_errors_total", `op="put"`); !ok || v < 1 {
		t.Errorf("store errors of op put: %v (found %v), want at least 1", v, ok)
	}
	_, err := f.sdk.Responses.New(ctx, responses.ResponseNewParams{Model: "demo", Store: openai.Bool(false), MaxOutputTokens: openai.Int(4),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil {
		t.Errorf("store:false with the store down: %v", err)
	}
}
