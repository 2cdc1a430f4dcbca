package preprocessor

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// BenchmarkConversationTurn measures one turn of a long conversation
// (Qwen3's template and tokenizer, about 60,000 prompt tokens after 30
// turns, each adding a user message of about 200 words and an answer of
// about 60): rendered and encoded whole (whole), with the conversation
// cache holding the previous turn (cached), and, for scale, the template
// render alone (render) and the encoding of only the text the turn adds
// to the prompt (new-text).
func BenchmarkConversationTurn(b *testing.B) {
	dir := needShared(b, filepath.Join("models", "qwen3"))
	plain := loadModel(b, dir, modelcard.Options{Name: "qwen3"})
	conv := &conversation{rng: rand.New(rand.NewPCG(5, 6)), system: "You are a helpful assistant."}
	conv.messages = append(conv.messages, map[string]any{"role": "user", "content": conv.words(45000)})
	var body []byte
	for k := range 30 {
		body = conv.turn(k + 1)
	}
	// Two different next turns, sent in turn: each finds the previous
	// turn's prompt (the other one's beginning) in the cache.
	next := func(seed uint64) []byte {
		c := *conv
		c.rng = rand.New(rand.NewPCG(seed, 7))
		c.messages = append([]map[string]any(nil), conv.messages...)
		return c.turn(31)
	}
	a, bb := convRequest(b, next(1)), convRequest(b, next(2))
	last, err := plain.PrepareChat(convRequest(b, body))
	if err != nil {
		b.Fatal(err)
	}
	pa, err := plain.PrepareChat(a)
	if err != nil {
		b.Fatal(err)
	}
	common := 0
	for common < len(last.Prompt) && common < len(pa.Prompt) && last.Prompt[common] == pa.Prompt[common] {
		common++
	}
	b.Logf("prompt: %d tokens, %d bytes; the turn adds %d bytes", len(pa.Request.TokenIDs), len(pa.Prompt), len(pa.Prompt)-common)

	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			if _, err := plain.PrepareChat(a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		cached := withConversationCache(b, plain, 64<<20)
		if _, err := cached.PrepareChat(convRequest(b, body)); err != nil {
			b.Fatal(err)
		}
		reqs := [2]*openai.ChatCompletionRequest{a, bb}
		i := 0
		for b.Loop() {
			if _, err := cached.PrepareChat(reqs[i%2]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(cached.conv.reused.Load())/float64(max(i, 1)), "reused-ids/op")
	})
	b.Run("render", func(b *testing.B) {
		for b.Loop() {
			if _, err := plain.RenderChat(a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new-text", func(b *testing.B) {
		added := pa.Prompt[common:]
		for b.Loop() {
			if _, err := plain.tok.Encode(added, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
