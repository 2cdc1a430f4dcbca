package openai

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchWords is the vocabulary of the generated conversation: mostly
// ASCII, with a few words that need escapes or are not ASCII.
var benchWords = []string{
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as",
	"with", "was", "on", "be", "at", "by", "this", "had", "not", "are",
	"but", "from", "or", "have", "an", "they", "which", "one", "you", "were",
	"model", "token", "request", "server", "latency", "cache", "router", "prefill",
	`"quoted"`, `back\slash`, "café", "naïve", "中文", "😀", "<tag>", "a&b",
}

// benchText returns n words drawn from benchWords with a newline every
// few words.
func benchText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			if rng.IntN(16) == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		w := benchWords[rng.IntN(len(benchWords))]
		if rng.IntN(8) != 0 { // keep escapes and non-ASCII rare
			w = benchWords[rng.IntN(30)]
		}
		b.WriteString(w)
	}
	return b.String()
}

// longConversation is a chat body with a system message, one very long
// user message (~45,000 words) and 30 user/assistant turns.
func longConversation() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := []msg{
		{"system", "You are a helpful assistant. Answer briefly."},
		{"user", benchText(rng, 45000)},
	}
	for range 30 {
		msgs = append(msgs, msg{"assistant", benchText(rng, 160)}, msg{"user", benchText(rng, 100)})
	}
	body, err := json.Marshal(map[string]any{
		"model": "Qwen/Qwen3-0.6B", "messages": msgs, "max_tokens": 256,
		"temperature": 0.7, "stream": true, "stream_options": map[string]bool{"include_usage": true},
	})
	if err != nil {
		panic(err)
	}
	return body
}

// smallChat is a typical short chat request.
const smallChat = `{"model":"Qwen/Qwen3-0.6B","messages":[{"role":"system","content":"You are terse."},` +
	`{"role":"user","content":"What is the capital of France? Answer in one word."}],` +
	`"max_tokens":16,"temperature":0.2,"stream":true}`

func benchmarkDecodeChat(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeChat(body, DecodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeChatLongConversation(b *testing.B) { benchmarkDecodeChat(b, longConversation()) }

func BenchmarkDecodeChatSmall(b *testing.B) { benchmarkDecodeChat(b, []byte(smallChat)) }

func BenchmarkDecodeChatFull(b *testing.B) { benchmarkDecodeChat(b, []byte(fullChat)) }

// BenchmarkDecodeChatSlow is the encoding/json path alone, the baseline
// the benchmarks above are compared with.
func BenchmarkDecodeChatSlow(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{{"LongConversation", longConversation()}, {"Small", []byte(smallChat)}, {"Full", []byte(fullChat)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeChatSlow(bc.body, DecodeOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
