package preprocessor

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// withConversationCache returns a Model of m's card that keeps a
// conversation cache of budget bytes.
func withConversationCache(t testing.TB, m *Model, budget int64) *Model {
	t.Helper()
	c, err := NewModel(m.card, Options{Now: func() time.Time { return frozen }, Clock: func() time.Time { return frozen }, ConversationCacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	c.conv.minBytes = 0 // the tests' conversations are short
	return c
}

// conversation is a chat growing turn by turn, in the shapes templates
// treat differently: a system message or none, reasoning on past
// assistant turns (which some templates drop once a later turn exists),
// tool calls and their results, tools offered.
type conversation struct {
	rng      *rand.Rand
	system   string
	tools    bool
	messages []map[string]any
}

var convWords = strings.Fields("the of and to in is was for on that with as it by at from his an were are which this be or has had one but not what all when there can more if out so about up time them into only some could new like other then also after use two how our well way even because any these give most us 7 42 é café 東京 🙂 { } < > |")

func (c *conversation) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = convWords[c.rng.IntN(len(convWords))]
	}
	s := strings.Join(w, " ")
	if c.rng.IntN(4) == 0 {
		s += "\n\n  " // white space at a message's end
	}
	return s
}

// turn adds the answer to the last turn (from the second on) and a new
// user message, and returns the request of the turn.
func (c *conversation) turn(k int) []byte {
	if k > 0 {
		switch {
		case c.tools && k%3 == 1:
			id := fmt.Sprintf("call_%d", k)
			c.messages = append(c.messages,
				map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
					"id": id, "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":"` + c.words(2) + `"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": c.words(8)})
		default:
			msg := map[string]any{"role": "assistant", "content": c.words(5 + c.rng.IntN(20))}
			if k%2 == 0 {
				msg["reasoning_content"] = c.words(6)
			}
			c.messages = append(c.messages, msg)
		}
	}
	c.messages = append(c.messages, map[string]any{"role": "user", "content": c.words(3 + c.rng.IntN(30))})
	msgs := c.messages
	if c.system != "" {
		msgs = append([]map[string]any{{"role": "system", "content": c.system}}, msgs...)
	}
	req := map[string]any{"model": "m", "messages": msgs}
	if c.tools {
		req["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "lookup", "description": "look up", "parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}}}
	}
	b, _ := json.Marshal(req)
	return b
}

func convRequest(t testing.TB, body []byte) *openai.ChatCompletionRequest {
	t.Helper()
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// sharedChatModels returns the shared models with a tokenizer and a chat
// template.
func sharedChatModels(t *testing.T) map[string]*Model {
	t.Helper()
	root := needShared(t, "models")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	qwen, err := os.ReadFile(filepath.Join(root, "qwen3", "tokenizer.json"))
	if err != nil {
		t.Skipf("the shared qwen3 tokenizer is absent: %v", err)
	}
	out := map[string]*Model{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
			// A template without its tokenizer: with Qwen3's, whose
			// special tokens it may not write (fewer cuts), the ids
			// must still be exact.
			dir = withFiles(t, dir, map[string]string{"tokenizer.json": string(qwen)})
		}
		card, err := modelcard.FromDir(dir, modelcard.Options{Name: e.Name()})
		if err != nil {
			continue
		}
		m, err := NewModel(card, Options{Now: func() time.Time { return frozen }, Clock: func() time.Time { return frozen }})
		if err != nil || !m.HasChatTemplate() {
			continue
		}
		out[e.Name()] = m
	}
	return out
}

// Over every shared model with a chat template, every turn of multi-turn
// conversations (with and without a system message, tools and reasoning)
// gets the same prompt ids with the conversation cache as without it, and
// the same formatted prompt; from the second turn on most of the ids come
// from the cache where the template writes special tokens between
// messages.
func TestConversationCacheGivesTheIdsOfAWholeEncoding(t *testing.T) {
	models := sharedChatModels(t)
	if len(models) == 0 {
		t.Skip("no shared model with a tokenizer and a chat template")
	}
	for name, plain := range models {
		t.Run(name, func(t *testing.T) {
			cached := withConversationCache(t, plain, 64<<20)
			var total, reused int
			for ci, shape := range []struct {
				system string
				tools  bool
			}{{"You are a helpful assistant.", false}, {"", false}, {"Be brief.", true}} {
				conv := &conversation{rng: rand.New(rand.NewPCG(uint64(ci), 9)), system: shape.system, tools: shape.tools}
				for k := range 12 {
					body := conv.turn(k)
					want, werr := plain.PrepareChat(convRequest(t, body))
					before := cached.conv.reused.Load()
					got, gerr := cached.PrepareChat(convRequest(t, body))
					if (werr != nil) != (gerr != nil) {
						t.Fatalf("conversation %d turn %d: error %v with the cache, %v without", ci, k, gerr, werr)
					}
					if werr != nil {
						break // the template refuses this shape
					}
					if got.Prompt != want.Prompt {
						t.Fatalf("conversation %d turn %d: the formatted prompt differs", ci, k)
					}
					if !slices.Equal(got.Request.TokenIDs, want.Request.TokenIDs) {
						t.Fatalf("conversation %d turn %d: ids differ with the cache\nprompt %q\n got %v\nwant %v", ci, k, want.Prompt, got.Request.TokenIDs, want.Request.TokenIDs)
					}
					checkWire(t, got.Request)
					if k > 0 {
						total += len(want.Request.TokenIDs)
						reused += int(cached.conv.reused.Load() - before)
					}
				}
			}
			t.Logf("%d of %d ids of later turns were in the cache", reused, total)
			if (name == "qwen3" || name == "llama-3-8b-instruct") && reused < total/2 {
				t.Errorf("only %d of %d ids of later turns came from the cache", reused, total)
			}
		})
	}
}

// The cache holds no more than its budget, drops the least recently used
// conversations first, and keeps giving exact ids.
func TestConversationCacheIsBounded(t *testing.T) {
	plain := demoModel(t)
	const budget = 64 << 10
	cached := withConversationCache(t, plain, budget)
	convs := make([]*conversation, 12)
	for i := range convs {
		convs[i] = &conversation{rng: rand.New(rand.NewPCG(uint64(i), 1)), system: "You are terse."}
	}
	for k := range 10 {
		for i, conv := range convs {
			body := conv.turn(k)
			want, got := prepareBoth(t, plain, cached, body)
			if !slices.Equal(got.Request.TokenIDs, want.Request.TokenIDs) {
				t.Fatalf("conversation %d turn %d: ids differ with the cache", i, k)
			}
			checkWire(t, got.Request)
			if n, size := cached.conv.stats(); size > budget || n == 0 {
				t.Fatalf("conversation %d turn %d: the cache holds %d prompts, %d bytes, over its %d", i, k, n, size, budget)
			}
		}
	}
	// Each conversation's last prompt superseded its earlier ones: at most
	// one prompt per conversation is held.
	if n, _ := cached.conv.stats(); n > len(convs) {
		t.Errorf("%d prompts held for %d conversations", n, len(convs))
	}
}

// Conversations on many goroutines share one cache (run with -race).
func TestConversationCacheConcurrentConversations(t *testing.T) {
	plain := demoModel(t)
	cached := withConversationCache(t, plain, 1<<20)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			// Two goroutines per system prompt: shared beginnings.
			conv := &conversation{rng: rand.New(rand.NewPCG(uint64(g), 2)), system: fmt.Sprintf("system %d", g/2)}
			for k := range 8 {
				body := conv.turn(k)
				want, err := plain.PrepareChat(convRequest(t, body))
				if err != nil {
					errs <- err
					return
				}
				got, err := cached.PrepareChat(convRequest(t, body))
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(got.Request.TokenIDs, want.Request.TokenIDs) {
					errs <- fmt.Errorf("goroutine %d turn %d: ids differ with the cache", g, k)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if cached.conv.reused.Load() == 0 {
		t.Error("no id came from the cache")
	}
}

// checkWire checks that r goes on the wire as it would without the JSON
// of its ids that the cache wrote.
func checkWire(t *testing.T, r *backend.Request) {
	t.Helper()
	if r.PromptJSON == nil {
		t.Fatal("the cache gave no JSON of the ids")
	}
	got, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	plain := *r
	plain.PromptJSON = nil
	want, err := plain.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("the request on the wire differs with the cache's JSON of its ids")
	}
}

// A prompt shorter than conversationMinBytes is encoded whole and not
// kept: short single-turn traffic spends nothing on the cache.
func TestConversationCacheLeavesShortPromptsOut(t *testing.T) {
	plain := demoModel(t)
	cached := withConversationCache(t, plain, 1<<20)
	cached.conv.minBytes = conversationMinBytes
	conv := &conversation{rng: rand.New(rand.NewPCG(7, 7)), system: "Hi."}
	for k := range 3 {
		body := conv.turn(k)
		want, got := prepareBoth(t, plain, cached, body)
		if len(want.Prompt) >= conversationMinBytes {
			t.Fatalf("turn %d's prompt is %d bytes: not short", k, len(want.Prompt))
		}
		if !slices.Equal(got.Request.TokenIDs, want.Request.TokenIDs) {
			t.Fatalf("turn %d: ids differ", k)
		}
	}
	if n, _ := cached.conv.stats(); n != 0 || cached.conv.reused.Load() != 0 {
		t.Errorf("%d short prompts kept, %d ids reused", n, cached.conv.reused.Load())
	}
}

// prepareBoth prepares body's chat request with plain and with cached.
func prepareBoth(t *testing.T, plain, cached *Model, body []byte) (want, got *Prepared) {
	t.Helper()
	want, err := plain.PrepareChat(convRequest(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if got, err = cached.PrepareChat(convRequest(t, body)); err != nil {
		t.Fatal(err)
	}
	return want, got
}
