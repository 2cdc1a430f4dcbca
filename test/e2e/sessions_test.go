package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// TestSessionAffinity runs two frontends (round-robin, session affinity
// on, bindings shared over one NATS) in front of two mocker processes: a
// session's 20 turns, sent through both frontends, all land on one
// worker while requests without a session alternate; the worker is
// SIGKILLed, the next turn is served by the other one, and the session
// stays there through either frontend.
func TestSessionAffinity(t *testing.T) {
	c := newCluster(t, "etcd", "nats")
	args := []string{"--router-session-affinity-ttl", "60", "--migration-limit", "3"}
	fronts := []*frontend{c.startFrontendArgs(args), c.startFrontendArgs(args)}
	procs := c.startMockersByID(t, fronts, []string{"mocker-a", "mocker-b"}, deterministic)
	for _, f := range fronts {
		f.waitModels(t, "demo")
	}

	t.Run("without a session, requests alternate", func(t *testing.T) {
		var got []uint64
		for range 4 {
			got = append(got, servedBy(t, fronts[0], ""))
		}
		if got[0] == got[1] || got[1] == got[2] {
			t.Fatalf("workers %v in round-robin mode, want them to alternate", got)
		}
	})

	const session = "conversation-1"
	first := servedBy(t, fronts[0], session)
	// The second frontend learns the binding over NATS.
	waitFor(t, 10*time.Second, "the binding shared with the second frontend", func() bool {
		v, _ := fronts[1].scrape(t).value("dynamo_frontend_session_affinity_sessions", `model="demo"`)
		return v == 1
	}, fronts[1].process)
	for i := range 19 {
		f := fronts[i%2]
		if got := servedBy(t, f, session); got != first {
			t.Fatalf("turn %d (frontend %d) served by %x, want the session's worker %x", i+2, i%2, got, first)
		}
	}

	procs[first].kill()
	var other uint64
	for id := range procs {
		if id != first {
			other = id
		}
	}
	if got := servedBy(t, fronts[0], session); got != other {
		t.Fatalf("the turn after the kill was served by %x, want the other worker %x", got, other)
	}
	for i := range 4 {
		if got := servedBy(t, fronts[(i+1)%2], session); got != other {
			t.Fatalf("turn %d after the kill (frontend %d) served by %x, want the new binding %x", i+2, (i+1)%2, got, other)
		}
	}
	m := fronts[0].scrape(t)
	if v, _ := m.value("dynamo_frontend_session_affinity_requests_total", `model="demo"`, `result="rebound"`); v < 1 {
		t.Errorf("session_affinity_requests_total{result=rebound} = %v on the frontend that saw the kill, want at least 1", v)
	}
}

// TestSessionControlRefusesBadInput answers a malformed
// nvext.session_control with a 400 that names the field.
func TestSessionControlRefusesBadInput(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	c.startMocker("mocker", deterministic)
	f := c.startFrontendArgs([]string{"--router-session-affinity-ttl", "60"})
	f.waitModels(t, "demo")
	for _, sc := range []string{`{"action":"open"}`, `{"session_id":"a","action":"pin"}`, `{"session_id":"a","timeout":0}`, `"a"`} {
		resp, body := f.post(t, chatPath, []byte(`{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"nvext":{"session_control":`+sc+`}}`))
		var e openai.ErrorBody
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || !bytes.Contains(body, []byte("session_control")) {
			t.Errorf("session_control %s: status %d, body %s; want a 400 naming session_control", sc, resp.StatusCode, body)
		}
	}
}

// servedBy sends one chat turn (with session as X-Dynamo-Session-ID when
// set) and returns the worker that served it.
func servedBy(t testing.TB, f *frontend, session string) uint64 {
	t.Helper()
	body, _ := json.Marshal(object{"model": "demo", "messages": []object{{"role": "user", "content": "hello"}}, "max_tokens": 2,
		"nvext": object{"extra_fields": []string{"worker_id"}}})
	req, err := http.NewRequest(http.MethodPost, f.url+chatPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set(openai.SessionHeader, session)
	}
	resp, err := f.http.Do(req)
	if err != nil {
		f.fatalf(t, "POST %s: %v", chatPath, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		NvExt struct {
			WorkerID *struct {
				Decode uint64 `json:"decode_worker_id"`
			} `json:"worker_id"`
		} `json:"nvext"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &r) != nil || r.NvExt.WorkerID == nil {
		f.fatalf(t, "session %q: status %d, body %s; want an answer with nvext.worker_id", session, resp.StatusCode, b)
	}
	return r.NvExt.WorkerID.Decode
}

// TestMessagesConversationStaysOnItsWorker: with session affinity on, the
// turns of one Messages conversation (the Anthropic SDK sends no session
// id: the frontend recognises the conversation by its first turn) all go
// to the worker that served the first, in round-robin mode.
func TestMessagesConversationStaysOnItsWorker(t *testing.T) {
	f, servedSince := affinityRig(t)
	client := messagesClient(f, "x")
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Tell me about Paris."))}
	const turns = 6
	for i := range turns {
		m, err := client.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "demo", MaxTokens: 4, Messages: msgs})
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		msgs = append(msgs, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("And then %d?", i))))
	}
	if d := servedSince(); !(d[0] == turns && d[1] == 0 || d[0] == 0 && d[1] == turns) {
		t.Fatalf("the workers served %v of the conversation's %d turns, want all on one", d, turns)
	}
	m := f.scrape(t)
	if v, _ := m.value("dynamo_frontend_session_affinity_requests_total", `model="demo"`, `result="bound"`); v != turns-1 {
		t.Errorf("session_affinity_requests_total{result=bound} = %v, want %d", v, turns-1)
	}
}

// TestResponsesConversationStaysOnItsWorker: with session affinity on,
// the turns of a stored Responses conversation (chained with
// previous_response_id, no session id) all go to the worker that served
// the first, in round-robin mode.
func TestResponsesConversationStaysOnItsWorker(t *testing.T) {
	f, servedSince := affinityRig(t)
	const turns = 5
	prev := ""
	for i := range turns {
		params := responses.ResponseNewParams{Model: "demo", MaxOutputTokens: openaisdk.Int(4),
			Input: responses.ResponseNewParamsInputUnion{OfString: openaisdk.String(fmt.Sprintf("Turn %d: tell me more.", i))}}
		if prev != "" {
			params.PreviousResponseID = openaisdk.String(prev)
		}
		r, err := f.sdk.Responses.New(t.Context(), params)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		prev = r.ID
	}
	if d := servedSince(); !(d[0] == turns && d[1] == 0 || d[0] == 0 && d[1] == turns) {
		t.Fatalf("the workers served %v of the conversation's %d turns, want all on one", d, turns)
	}
}

// affinityRig starts two mockers and a round-robin frontend with session
// affinity on, and returns the frontend and a function giving the
// requests each worker served since.
func affinityRig(t *testing.T) (*frontend, func() []float64) {
	t.Helper()
	c := newCluster(t, "file", "tcp")
	var workers []*process
	for _, name := range []string{"mocker-a", "mocker-b"} {
		workers = append(workers, c.startMocker(name, deterministic))
	}
	f := c.startFrontendArgs([]string{"--router-session-affinity-ttl", "60"})
	f.waitModels(t, "demo")
	waitFor(t, 30*time.Second, "both workers in /health", func() bool { return len(f.instanceIDs(t)) == 2 }, f.process)
	served := func() []float64 {
		var out []float64
		for _, w := range workers {
			v, _ := w.scrape(t).value("dynamo_component_requests_total", generateEndpoint)
			out = append(out, v)
		}
		return out
	}
	before := served()
	return f, func() []float64 {
		now := served()
		return []float64{now[0] - before[0], now[1] - before[1]}
	}
}
