package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/responsestore"
)

func storedStack(t *testing.T, store ResponseStore, eng *textEngine) *stack {
	t.Helper()
	s := newStackWith(t, Config{}, pipeline.Config{}, Deps{ResponseStore: store})
	s.addWorker(t, "demo", eng)
	return s
}

func fileStore(t *testing.T) *responsestore.File {
	t.Helper()
	f, err := responsestore.NewFile(responsestore.FileConfig{Dir: t.TempDir(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func decodeResponse(t *testing.T, r response) openai.Response {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var resp openai.Response
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	return resp
}

// A conversation of two turns, retrieved, listed and deleted.
func TestResponsesStoredConversation(t *testing.T) {
	s := storedStack(t, fileStore(t), helloEngine(t, 0))
	first := decodeResponse(t, s.post(t, "/v1/responses", `{"model":"demo","input":"hi","max_output_tokens":5,"instructions":"Be brief."}`))
	if !first.Store {
		t.Errorf("first turn: store %v, want true (the default)", first.Store)
	}
	second := decodeResponse(t, s.post(t, "/v1/responses", fmt.Sprintf(`{"model":"demo","input":"again","max_output_tokens":5,"previous_response_id":%q}`, first.ID)))
	if second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID || second.Instructions != nil {
		t.Errorf("second turn echoes previous_response_id %v, instructions %v", second.PreviousResponseID, second.Instructions)
	}
	if second.Usage.InputTokens <= first.Usage.InputTokens {
		t.Errorf("second turn's prompt (%d tokens) does not hold the first (%d)", second.Usage.InputTokens, first.Usage.InputTokens)
	}
	got := decodeResponse(t, s.get(t, "/v1/responses/"+second.ID))
	if got.ID != second.ID || got.OutputText() != second.OutputText() || got.Status != second.Status {
		t.Errorf("GET: %+v", got)
	}

	// The items the model saw: user "hi", the first answer, user "again".
	r := s.get(t, "/v1/responses/"+second.ID+"/input_items?order=asc")
	var list struct {
		Object  string `json:"object"`
		Data    []map[string]any
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
		HasMore bool   `json:"has_more"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
		t.Fatalf("input_items: %d %s", r.status, r.body)
	}
	if len(list.Data) != 3 || list.Data[0]["role"] != "user" || list.Data[1]["role"] != "assistant" || list.Data[1]["id"] != first.Output[0].ID || list.Data[2]["role"] != "user" || list.HasMore {
		t.Fatalf("input_items %s", r.body)
	}
	ascIDs := []any{list.Data[0]["id"], list.Data[1]["id"], list.Data[2]["id"]}
	// Pages of one, newest first, walked with after.
	var walked []any
	after := ""
	for range 4 {
		r := s.get(t, "/v1/responses/"+second.ID+"/input_items?limit=1"+after)
		if err := json.Unmarshal(r.body, &list); err != nil || len(list.Data) != 1 {
			t.Fatalf("page: %s", r.body)
		}
		walked = append(walked, list.Data[0]["id"])
		if !list.HasMore {
			break
		}
		after = "&after=" + list.LastID
	}
	if len(walked) != 3 || walked[0] != ascIDs[2] || walked[1] != ascIDs[1] || walked[2] != ascIDs[0] {
		t.Errorf("walked %v newest first, want the reverse of %v", walked, ascIDs)
	}

	// before: the page that ends right before the item.
	r = s.get(t, fmt.Sprintf("/v1/responses/%s/input_items?order=asc&limit=1&before=%s", second.ID, ascIDs[2]))
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Data) != 1 || list.Data[0]["id"] != ascIDs[1] || !list.HasMore {
		t.Errorf("page before %v: %s", ascIDs[2], r.body)
	}
	if r := s.get(t, "/v1/responses/"+second.ID+"/input_items?after=msg_nope"); r.status != 400 {
		t.Errorf("after an unknown item: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/v1/responses/"+second.ID+"/input_items?limit=101"); r.status != 400 {
		t.Errorf("limit 101: %d %s", r.status, r.body)
	}

	r = s.send(t, http.MethodDelete, "/v1/responses/"+first.ID, "")
	if r.status != 200 || !strings.Contains(string(r.body), `"deleted":true`) {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/v1/responses/" + first.ID, "/v1/responses/" + first.ID + "/input_items"} {
		if r := s.get(t, path); r.status != 404 || !strings.Contains(errorInfo(t, r.body).Message, first.ID) {
			t.Errorf("GET %s after DELETE: %d %s", path, r.status, r.body)
		}
	}
	// The second turn kept the whole conversation: it continues.
	if r := s.post(t, "/v1/responses", fmt.Sprintf(`{"model":"demo","input":"more","max_output_tokens":5,"previous_response_id":%q}`, second.ID)); r.status != 200 {
		t.Errorf("third turn after the first was deleted: %d %s", r.status, r.body)
	}
	r = s.post(t, "/v1/responses", `{"model":"demo","input":"x","previous_response_id":"resp_nope"}`)
	if e := errorInfo(t, r.body); r.status != 404 || e.Param == nil || *e.Param != "previous_response_id" || !strings.Contains(e.Message, "resp_nope") {
		t.Errorf("unknown previous_response_id: %d %s", r.status, r.body)
	}
	// store:false is answered and not kept.
	unstored := decodeResponse(t, s.post(t, "/v1/responses", `{"model":"demo","input":"x","max_output_tokens":2,"store":false}`))
	if r := s.get(t, "/v1/responses/"+unstored.ID); unstored.Store || r.status != 404 {
		t.Errorf("store:false: echoed %v, GET %d", unstored.Store, r.status)
	}
}

// A streamed answer is stored before its terminal event.
func TestResponsesStoredStream(t *testing.T) {
	s := storedStack(t, fileStore(t), helloEngine(t, 0))
	r := s.post(t, "/v1/responses", `{"model":"demo","input":"hi","max_output_tokens":5,"stream":true}`)
	var id, text string
	for _, d := range strings.Split(string(r.body), "\n") {
		if d, ok := strings.CutPrefix(d, "data: "); ok {
			var ev openai.ResponseEvent
			if json.Unmarshal([]byte(d), &ev) == nil && ev.Response != nil {
				id, text = ev.Response.ID, ev.Response.OutputText()
			}
		}
	}
	got := decodeResponse(t, s.get(t, "/v1/responses/"+id))
	if got.OutputText() != text || text == "" {
		t.Errorf("stored %q, streamed %q", got.OutputText(), text)
	}
}

// unavailableStore fails every operation as a store that is down.
type unavailableStore struct{}

func (unavailableStore) Get(context.Context, string) (*responsestore.Record, error) {
	return nil, fmt.Errorf("%w: down", responsestore.ErrUnavailable)
}
func (unavailableStore) Put(context.Context, *responsestore.Record) error {
	return fmt.Errorf("%w: down", responsestore.ErrUnavailable)
}
func (unavailableStore) Delete(context.Context, string) error {
	return fmt.Errorf("%w: down", responsestore.ErrUnavailable)
}

// A store that is down: what needs it gets 503 with Retry-After; a
// stored request is still answered (the write is counted); a stateless
// one does not notice.
func TestResponsesStoreUnavailable(t *testing.T) {
	s := storedStack(t, unavailableStore{}, helloEngine(t, 0))
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/responses", `{"model":"demo","input":"x","previous_response_id":"resp_1"}`},
		{http.MethodPost, "/v1/responses", `{"model":"demo","input":"x","background":true}`},
		{http.MethodGet, "/v1/responses/resp_1", ""},
		{http.MethodGet, "/v1/responses/resp_1/input_items", ""},
		{http.MethodDelete, "/v1/responses/resp_1", ""},
		{http.MethodPost, "/v1/responses/resp_1/cancel", ""},
	} {
		r := s.send(t, c.method, c.path, c.body)
		if e := errorInfo(t, r.body); r.status != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(e.Message, "unavailable") {
			t.Errorf("%s %s %s: %d (Retry-After %q) %s", c.method, c.path, c.body, r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	stored := decodeResponse(t, s.post(t, "/v1/responses", `{"model":"demo","input":"x","max_output_tokens":5}`))
	if stored.OutputText() != "Hello world" {
		t.Errorf("stored request answered %q", stored.OutputText())
	}
	if r := s.post(t, "/v1/responses", `{"model":"demo","input":"x","max_output_tokens":5,"store":false}`); r.status != 200 {
		t.Errorf("store:false: %d %s", r.status, r.body)
	}
	m := string(s.get(t, "/metrics").body)
	for _, op := range []string{"get", "put"} {
		if !strings.Contains(m, `dynamo_frontend_responses_store_errors_total{op="`+op+`"}`) {
			t.Errorf("metrics lack store errors of op %s:\n%s", op, grepLines(m, "store_errors"))
		}
	}
}

// Without a store, responses are answered as before and say so.
func TestResponsesStorageOff(t *testing.T) {
	s := storedStack(t, nil, helloEngine(t, 0))
	resp := decodeResponse(t, s.post(t, "/v1/responses", `{"model":"demo","input":"x","max_output_tokens":2}`))
	if resp.Store {
		t.Error("a response not stored says store: true")
	}
	r := s.get(t, "/v1/responses/"+resp.ID)
	if e := errorInfo(t, r.body); r.status != 404 || !strings.Contains(e.Message, "does not store responses") {
		t.Errorf("GET without a store: %d %s", r.status, r.body)
	}
}

// A background response answers queued, runs, and is polled to its end;
// another is cancelled while it runs.
func TestResponsesBackground(t *testing.T) {
	eng := helloEngine(t, 20*time.Millisecond)
	eng.seen = make(chan string, 4)
	s := storedStack(t, fileStore(t), eng)
	queued := decodeResponse(t, s.post(t, "/v1/responses", `{"model":"demo","input":"x","max_output_tokens":5,"background":true}`))
	if queued.Status != openai.ResponseQueued || !queued.Background {
		t.Fatalf("background answer: status %s, background %v", queued.Status, queued.Background)
	}
	<-eng.seen
	var done openai.Response
	deadline := time.Now().Add(10 * time.Second)
	for done = decodeResponse(t, s.get(t, "/v1/responses/"+queued.ID)); done.Status == openai.ResponseQueued || done.Status == openai.ResponseInProgress; done = decodeResponse(t, s.get(t, "/v1/responses/"+queued.ID)) {
		if time.Now().After(deadline) {
			t.Fatalf("still %s after 10 s", done.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if done.Status != openai.ResponseIncomplete || done.OutputText() != "Hello world" {
		t.Errorf("background response ended %s with %q", done.Status, done.OutputText())
	}

	long := decodeResponse(t, s.post(t, "/v1/responses", `{"model":"demo","input":"x","max_output_tokens":1000,"background":true}`))
	reqID := <-eng.seen
	cancelled := decodeResponse(t, s.post(t, "/v1/responses/"+long.ID+"/cancel", ""))
	if cancelled.Status != openai.ResponseCancelled {
		t.Errorf("cancel answered status %s", cancelled.Status)
	}
	if got := decodeResponse(t, s.get(t, "/v1/responses/"+long.ID)); got.Status != openai.ResponseCancelled {
		t.Errorf("GET after cancel: %s", got.Status)
	}
	if how := eng.endedAs(reqID); how != "killed" {
		t.Errorf("the engine's request ended %q, want killed", how)
	}
	if r := s.post(t, "/v1/responses/"+queued.ID+"/cancel", ""); decodeResponse(t, r).Status != openai.ResponseIncomplete {
		t.Errorf("cancel of an ended response changed it: %s", r.body)
	}
	if r := s.post(t, "/v1/responses", `{"model":"demo","input":"x","background":true,"store":false}`); r.status != 400 {
		t.Errorf("background without store: %d %s", r.status, r.body)
	}
}
