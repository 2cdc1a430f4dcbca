package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// chatMsg is one message as a fake server received it.
type chatMsg struct{ Role, Content string }

// chatLog is a fake chat server that streams a distinct answer to every
// request (in pieces, with characters JSON escapes, and a reasoning chunk
// that is not content), and keeps every request's messages and, for
// every answer, the messages it answered.
type chatLog struct {
	// refuseTurn, when > 0, is the turn answered with 503 instead.
	refuseTurn int

	mu       sync.Mutex
	requests [][]chatMsg
	answered map[string]string // answer → key of the messages it answered
}

func newChatLog() *chatLog { return &chatLog{answered: map[string]string{}} }

func historyKey(msgs []chatMsg) string {
	b, _ := json.Marshal(msgs)
	return string(b)
}

func (l *chatLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msgs []chatMsg
	prompt := 0
	for _, m := range req.Messages {
		text := ""
		if m.Content.Text != nil {
			text = *m.Content.Text
		}
		msgs = append(msgs, chatMsg{m.Role, text})
		prompt += len(strings.Fields(text))
	}
	if l.refuseTurn > 0 && (len(msgs)+1)/2 == l.refuseTurn {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	l.mu.Lock()
	answer := fmt.Sprintf("answer %d: \"quoted\" <b>&amp; é ✓\n\tend ", len(l.requests))
	l.requests = append(l.requests, msgs)
	l.answered[answer] = historyKey(msgs)
	l.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	send := func(d openai.ChatDelta, u *openai.Usage) {
		c := openai.ChatCompletionChunk{Object: openai.ObjectChatCompletionChunk, Model: req.Model, Usage: u}
		if u == nil {
			c.Choices = []openai.ChatChunkChoice{{Delta: d}}
		}
		_ = openai.WriteSSE(w, "", c)
	}
	empty, thinking := "", "thinking"
	send(openai.ChatDelta{Role: "assistant", Content: &empty}, nil)
	send(openai.ChatDelta{ReasoningContent: &thinking}, nil)
	runes := []rune(answer)
	for _, part := range []string{string(runes[:9]), string(runes[9:21]), string(runes[21:])} {
		send(openai.ChatDelta{Content: &part}, nil)
	}
	send(openai.ChatDelta{}, &openai.Usage{PromptTokens: prompt, CompletionTokens: 3, TotalTokens: prompt + 3})
	fmt.Fprint(w, openai.SSEDone)
}

// multiTurnConfig is a small multi-turn run against url.
func multiTurnConfig(url string) Config {
	cfg := testConfig(url)
	cfg.Workload = WorkloadMultiTurn
	cfg.Turns, cfg.TurnLen, cfg.OSL, cfg.HistoryLen = 4, 6, 3, 60
	cfg.Concurrency, cfg.Requests, cfg.Warmup = 3, 30, 2
	return cfg
}

// Every turn re-sends its conversation's history: turn k holds 2k−1
// messages, user and assistant in turn, each assistant message the
// answer the server streamed to exactly the messages before it, verbatim.
// Conversations start from their own first word and never mix.
func TestMultiTurnResendsTheHistoryWithTheAnswers(t *testing.T) {
	log := newChatLog()
	srv := httptest.NewServer(log)
	defer srv.Close()
	cfg := multiTurnConfig(srv.URL)
	rep := runFor(t, cfg)
	if rep.Completed != cfg.Requests || rep.Failed != 0 {
		t.Fatalf("completed %d, failed %d (%v); want %d turns completed", rep.Completed, rep.Failed, rep.ErrorSamples, cfg.Requests)
	}
	first := cfg.HistoryLen - (cfg.Turns-1)*(cfg.TurnLen+cfg.OSL) // 33

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.requests) != cfg.Warmup+cfg.Requests {
		t.Fatalf("server got %d requests, want %d", len(log.requests), cfg.Warmup+cfg.Requests)
	}
	turnsOf := map[string][]int{}  // conversation (first word) → turns seen
	opening := map[string]string{} // conversation → first user message
	for i, msgs := range log.requests {
		if len(msgs)%2 != 1 || len(msgs) > 2*cfg.Turns-1 {
			t.Fatalf("request %d holds %d messages, want 2k−1 for a turn k ≤ %d", i, len(msgs), cfg.Turns)
		}
		for j, m := range msgs {
			want := "user"
			if j%2 == 1 {
				want = "assistant"
			}
			if m.Role != want {
				t.Fatalf("request %d message %d is %s's, want %s's", i, j, m.Role, want)
			}
			switch {
			case j == 0:
				if n := len(strings.Fields(m.Content)); n != first {
					t.Errorf("request %d: first message has %d words, want %d", i, n, first)
				}
			case m.Role == "user":
				if n := len(strings.Fields(m.Content)); n != cfg.TurnLen {
					t.Errorf("request %d message %d: %d words, want %d", i, j, n, cfg.TurnLen)
				}
			default:
				if got, ok := log.answered[m.Content]; !ok || got != historyKey(msgs[:j]) {
					t.Fatalf("request %d message %d: %q is not the answer given to the %d messages before it", i, j, m.Content, j)
				}
			}
		}
		id := strings.Fields(msgs[0].Content)[0]
		if _, err := strconv.Atoi(id); err != nil {
			t.Fatalf("request %d: conversation starts with %q, want its number", i, id)
		}
		if o, ok := opening[id]; ok && o != msgs[0].Content {
			t.Fatalf("conversation %s has two first messages", id)
		}
		opening[id] = msgs[0].Content
		turnsOf[id] = append(turnsOf[id], (len(msgs)+1)/2)
	}
	for id, turns := range turnsOf {
		for k, turn := range turns {
			if turn != k+1 {
				t.Fatalf("conversation %s sent turns %v, want 1, 2, … in order", id, turns)
			}
		}
	}
	seen := map[string]string{}
	for id, o := range opening {
		if other, ok := seen[o]; ok {
			t.Errorf("conversations %s and %s open alike", id, other)
		}
		seen[o] = id
	}
	if len(turnsOf) < cfg.Requests/cfg.Turns {
		t.Errorf("%d conversations for %d turns of %d", len(turnsOf), cfg.Warmup+cfg.Requests, cfg.Turns)
	}
}

// The history grows by a turn's message and the last answer at every
// turn and reaches history-len words at the last; the report gives the
// prompt tokens and TTFT by turn and how the conversations ended. Warm-up
// turns are left out.
func TestMultiTurnReportsByTurn(t *testing.T) {
	srv := httptest.NewServer(BaselineHandler(BaselineOptions{}))
	defer srv.Close()
	cfg := multiTurnConfig(srv.URL)
	cfg.Turns, cfg.TurnLen, cfg.OSL, cfg.HistoryLen = 5, 10, 4, 200
	cfg.Concurrency, cfg.Requests, cfg.Warmup = 1, 10, 3
	cfg.WatchPIDs = []int{os.Getpid()}
	rep := runFor(t, cfg)
	// One conversation at a time: warm-up turns 1-3 of the first, then
	// its turns 4 and 5, all five of the second and three of the third.
	if rep.Completed != 10 || rep.Config.FirstLen != 144 {
		t.Fatalf("completed %d (%v), first message %d words; want 10 and 200 − 4·(10+4) = 144", rep.Completed, rep.ErrorSamples, rep.Config.FirstLen)
	}
	want := []TurnStats{}
	for k := 1; k <= 5; k++ {
		want = append(want, TurnStats{Turn: k, LastTurn: k, Completed: 2, PromptTokens: float64(144 + (k-1)*14)})
	}
	if diff := cmp.Diff(want, rep.Turns, cmp.Transformer("noTTFT", func(s TurnStats) TurnStats { s.TTFT = Summary{}; return s })); diff != "" {
		t.Errorf("by turn (-want +got):\n%s", diff)
	}
	for _, row := range rep.Turns {
		if row.TTFT.Count != 2 || row.TTFT.P90 < row.TTFT.P50 || row.TTFT.P50 <= 0 {
			t.Errorf("turn %d TTFT %+v, want two samples", row.Turn, row.TTFT)
		}
	}
	if got, want := rep.Conversations, (&ConversationStats{Finished: 2, Unfinished: 1}); !cmp.Equal(got, want) {
		t.Errorf("conversations %+v, want %+v", got, want)
	}
	if rep.InputTokens != 2*(144+158+172+186+200) {
		t.Errorf("input tokens %d, want the ten turns' prompts", rep.InputTokens)
	}

	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"multi-turn turns=5 history-len=200 turn-len=10 (first message 144 words)", "turns:      10 completed",
		"turns/s", "conversations: 2 finished all 5 turns, 0 ended by a failed or refused turn, 1 cut short",
		"by turn:", "TTFT p90 ms", "prompt tokens", "200.0", "ms per completed turn"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}

	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"turns": [`, `"prompt_tokens_mean": 200`, `"last_turn": 5`, `"finished": 2`, `"history_len": 200`} {
		if !strings.Contains(js.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, js.String())
		}
	}
	back, err := ReadReport(&js)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
	var cmpOut bytes.Buffer
	if err := WriteCompare(&cmpOut, rep, back, "a", "b"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"turn 5 TTFT p50 ms", "CPU ms per completed turn"} {
		if !strings.Contains(cmpOut.String(), s) {
			t.Errorf("comparison lacks %q:\n%s", s, cmpOut.String())
		}
	}
}

// A refused turn ends its conversation; the next one starts afresh.
func TestMultiTurnRefusedTurnEndsTheConversation(t *testing.T) {
	log := newChatLog()
	log.refuseTurn = 3
	srv := httptest.NewServer(log)
	defer srv.Close()
	cfg := multiTurnConfig(srv.URL)
	cfg.Concurrency, cfg.Requests, cfg.Warmup = 1, 9, 0
	rep := runFor(t, cfg)
	if rep.Completed != 6 || rep.Refused != 3 {
		t.Fatalf("completed %d, refused %d (%v); want turns 1 and 2 of three conversations, each refused at turn 3",
			rep.Completed, rep.Refused, rep.ErrorSamples)
	}
	if len(rep.Turns) != 2 || rep.Turns[0].Completed != 3 || rep.Turns[1].Completed != 3 {
		t.Errorf("by turn %+v, want turns 1 and 2 three times each", rep.Turns)
	}
	if got, want := rep.Conversations, (&ConversationStats{Failed: 3}); !cmp.Equal(got, want) {
		t.Errorf("conversations %+v, want %+v", got, want)
	}
}

// A conversation is a function of the seed, its number and its answers.
func TestConversationIsReproducibleAndItsOwn(t *testing.T) {
	build := func(id int, seed uint64) string {
		c := newConversation(id, seed, 20, 5)
		for k := range 3 {
			c.addUser()
			c.addAnswer("ok " + strconv.Itoa(k))
		}
		return string(c.msgs)
	}
	if build(7, 1) != build(7, 1) {
		t.Error("the same conversation came out twice differently")
	}
	for _, other := range []string{build(8, 1), build(7, 2)} {
		if other == build(7, 1) {
			t.Error("two conversations came out alike")
		}
	}
	var msgs []chatMsg
	if err := json.Unmarshal([]byte("["+build(12, 1)+"]"), &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 6 || !strings.HasPrefix(msgs[0].Content, "12 ") || len(strings.Fields(msgs[0].Content)) != 20 ||
		len(strings.Fields(msgs[2].Content)) != 5 || msgs[5].Content != "ok 2" {
		t.Errorf("messages %+v: want 20 words from the conversation number, 5-word turns, the answers", msgs)
	}
}

// Conversations of many turns are reported in runs of turns.
func TestTurnRowsGatherLongConversations(t *testing.T) {
	tc := newTurnCollector(100)
	for turn := 1; turn <= 100; turn++ {
		tc.record(turn, outcome{hasContent: true, ttft: 1}, turn)
	}
	rows, _ := tc.report()
	if len(rows) != 34 || rows[0].turns() != "1-3" || rows[0].Completed != 3 || rows[0].PromptTokens != 2 || rows[33].turns() != "100" {
		t.Errorf("%d rows, first %+v, last %+v; want 34 of three turns (the last of one)", len(rows), rows[0], rows[len(rows)-1])
	}
}

func TestMultiTurnRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"completions", func(c *Config) { c.API = APICompletions }, `api "completions": want "chat"`},
		{"open loop", func(c *Config) { c.Rate = 100 }, "conversations run closed loop"},
		{"no turns", func(c *Config) { c.Turns = 0 }, "turns 0"},
		{"empty turns", func(c *Config) { c.TurnLen = 0 }, "turn-len 0"},
		{"negative history", func(c *Config) { c.HistoryLen = -1 }, "history-len -1"},
	}
	for _, tt := range tests {
		cfg := multiTurnConfig("http://127.0.0.1:1")
		tt.edit(&cfg)
		_, err := Run(t.Context(), cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig mentioning %q", tt.name, err, tt.want)
		}
	}
}
