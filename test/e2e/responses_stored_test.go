package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// turn sends one turn of a conversation with the SDK: input, continuing
// from previous ("" starts one).
func turn(t *testing.T, f *frontend, previous, input string, maxTokens int64) *responses.Response {
	t.Helper()
	p := responses.ResponseNewParams{
		Model:           "demo",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		MaxOutputTokens: openai.Int(maxTokens),
	}
	if previous != "" {
		p.PreviousResponseID = openai.String(previous)
	}
	r, err := f.sdk.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatalf("turn %q after %q: %v", input, previous, err)
	}
	return r
}

// formattedPrompt streams a turn with the formatted_prompt annotation
// and returns the prompt the model saw, and the response's id.
func formattedPrompt(t *testing.T, f *frontend, previous, input string) (prompt, id string) {
	t.Helper()
	resp, body := f.post(t, "/v1/responses", object{"model": "demo", "input": input, "max_output_tokens": 4, "stream": true,
		"previous_response_id": previous, "nvext": object{"annotations": []string{"formatted_prompt"}}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("streamed turn: %d %s", resp.StatusCode, body)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "formatted_prompt":
			if err := json.Unmarshal([]byte(data), &prompt); err != nil {
				t.Fatalf("formatted_prompt %s: %v", data, err)
			}
		case "response.created":
			var ev struct{ Response struct{ ID string } }
			_ = json.Unmarshal([]byte(data), &ev)
			id = ev.Response.ID
		}
	}
	if prompt == "" || id == "" {
		t.Fatalf("stream without a formatted_prompt or a response id:\n%s", body)
	}
	return prompt, id
}

// apiStatus is the HTTP status of an SDK error (0: none or not an API
// error) and its message.
func apiStatus(err error) (int, string) {
	var e *openai.Error
	if errors.As(err, &e) {
		return e.StatusCode, e.Message
	}
	return 0, ""
}

// TestResponsesStored runs stored conversations through the SDK against
// a frontend with the embedded store: previous_response_id across three
// turns (the third's prompt holds the first two), retrieve, input items
// page by page, delete, an unknown previous_response_id.
func TestResponsesStored(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	c.startMocker("mocker", deterministic)
	f := c.startFrontend()
	f.waitModels(t, "demo")
	ctx := t.Context()

	first, err := f.sdk.Responses.New(ctx, responses.ResponseNewParams{
		Model:           "demo",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Name a French city.")},
		Instructions:    openai.String("Answer like a pirate."),
		MaxOutputTokens: openai.Int(6),
	})
	if err != nil {
		t.Fatal(err)
	}
	second := turn(t, f, first.ID, "Name another one.", 6)
	prompt, third := formattedPrompt(t, f, second.ID, "And a third?")
	for _, want := range []string{"Name a French city.", first.OutputText(), "Name another one.", second.OutputText(), "And a third?"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the third turn's prompt lacks %q:\n%s", want, prompt)
		}
	}
	if i, j := strings.Index(prompt, "Name a French city."), strings.Index(prompt, "Name another one."); i < 0 || j < i {
		t.Errorf("the turns are out of order in the prompt:\n%s", prompt)
	}
	if strings.Contains(prompt, "pirate") {
		t.Errorf("the first turn's instructions were carried over:\n%s", prompt)
	}

	t.Run("retrieve", func(t *testing.T) {
		got, err := f.sdk.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != second.ID || got.OutputText() != second.OutputText() || got.Status != second.Status || got.PreviousResponseID != first.ID {
			t.Errorf("retrieved %s\nanswered %s", got.RawJSON(), second.RawJSON())
		}
	})

	t.Run("input items", func(t *testing.T) {
		// Five items, oldest first, two a page: the SDK follows after.
		var items []responses.ResponseItemUnion
		pager := f.sdk.Responses.InputItems.ListAutoPaging(ctx, third, responses.InputItemListParams{Limit: openai.Int(2), Order: responses.InputItemListParamsOrderAsc})
		for pager.Next() {
			items = append(items, pager.Current())
		}
		if err := pager.Err(); err != nil {
			t.Fatal(err)
		}
		roles := []string{}
		for _, it := range items {
			roles = append(roles, string(it.Role))
		}
		if strings.Join(roles, ",") != "user,assistant,user,assistant,user" || items[1].ID != first.Output[0].ID || items[3].ID != second.Output[0].ID {
			t.Errorf("input items: roles %v, ids %q %q; want the three turns (answers %s, %s)", roles, items[1].ID, items[3].ID, first.Output[0].ID, second.Output[0].ID)
		}
		page, err := f.sdk.Responses.InputItems.List(ctx, third, responses.InputItemListParams{Limit: openai.Int(2)})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 2 || !page.HasMore || page.Data[0].ID != items[4].ID {
			t.Errorf("first page, newest first: %s", page.RawJSON())
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := f.sdk.Responses.Delete(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		_, err := f.sdk.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
		if status, msg := apiStatus(err); status != http.StatusNotFound || !strings.Contains(msg, first.ID) {
			t.Errorf("GET after DELETE: %v, want 404 naming %s", err, first.ID)
		}
		if status, _ := apiStatus(f.sdk.Responses.Delete(ctx, first.ID)); status != http.StatusNotFound {
			t.Errorf("second DELETE: %d, want 404", status)
		}
	})

	t.Run("unknown previous_response_id", func(t *testing.T) {
		_, err := f.sdk.Responses.New(ctx, responses.ResponseNewParams{Model: "demo", PreviousResponseID: openai.String("resp_unknown42"),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		if status, msg := apiStatus(err); status != http.StatusNotFound || !strings.Contains(msg, "resp_unknown42") {
			t.Errorf("err %v, want 404 naming resp_unknown42", err)
		}
	})
}

// TestResponsesStoredBackground runs background responses on a mocker at
// real speed: one polled to its end, one cancelled while it runs.
func TestResponsesStoredBackground(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	mocker := c.startMocker("mocker", []string{"--deterministic"})
	f := c.startFrontend()
	f.waitModels(t, "demo")
	ctx := t.Context()
	background := func(maxTokens int64) *responses.Response {
		t.Helper()
		r, err := f.sdk.Responses.New(ctx, responses.ResponseNewParams{Model: "demo", Background: openai.Bool(true), MaxOutputTokens: openai.Int(maxTokens),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me a long story.")}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != responses.ResponseStatusQueued || !r.Background {
			t.Fatalf("background answer: status %s, background %v", r.Status, r.Background)
		}
		return r
	}

	short := background(8)
	var got *responses.Response
	f.waitFor(t, 30*time.Second, "the background response to end", func() bool {
		r, err := f.sdk.Responses.Get(ctx, short.ID, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		got = r
		return r.Status != responses.ResponseStatusQueued && r.Status != responses.ResponseStatusInProgress
	})
	if got.Status != responses.ResponseStatusIncomplete || got.Usage.OutputTokens != 8 || got.OutputText() == "" {
		t.Errorf("background response ended as %s", got.RawJSON())
	}

	long := background(3000)
	cancelled, err := f.sdk.Responses.Cancel(ctx, long.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Status != responses.ResponseStatusCancelled {
		t.Errorf("cancel answered status %s", cancelled.Status)
	}
	if r, err := f.sdk.Responses.Get(ctx, long.ID, responses.ResponseGetParams{}); err != nil || r.Status != responses.ResponseStatusCancelled {
		t.Errorf("GET after cancel: %v %v", r, err)
	}
	// The worker stopped generating 3,000 tokens at once: its request in
	// flight ends (a kill reaches it within 100 ms).
	mocker.waitFor(t, 2*time.Second, "the worker's requests in flight to end", func() bool {
		v, ok := mocker.scrape(t).value("dynamo_component_inflight_requests", `dynamo_endpoint="generate"`)
		return ok && v == 0
	})

	_, err = f.sdk.Responses.New(ctx, responses.ResponseNewParams{Model: "demo", Background: openai.Bool(true), Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if status, _ := apiStatus(err); status != http.StatusBadRequest {
		t.Errorf("background without store: %v, want 400", err)
	}
}

// TestResponsesStoredAcrossRestart continues a conversation after the
// frontend restarts on the same data directory.
func TestResponsesStoredAcrossRestart(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	c.startMocker("mocker", deterministic)
	dir := "DYN_RESPONSES_DATA_DIR=" + t.TempDir()
	f := c.startFrontend(dir)
	f.waitModels(t, "demo")
	first := turn(t, f, "", "Name a French city.", 6)
	f.killed = true // stopped on purpose
	if !f.stop(10 * time.Second) {
		t.Fatal("the frontend did not stop on SIGTERM")
	}
	g := c.startFrontend(dir)
	g.waitModels(t, "demo")
	prompt, _ := formattedPrompt(t, g, first.ID, "Name another one.")
	if !strings.Contains(prompt, "Name a French city.") || !strings.Contains(prompt, first.OutputText()) {
		t.Errorf("after the restart the prompt lacks the first turn:\n%s", prompt)
	}
}
