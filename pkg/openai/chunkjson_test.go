package openai

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// reflectEncode is Encode without the fast path: what encoding/json writes.
func reflectEncode(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func strPtr(s string) *string { return &s }

// tricky strings: every escape encoding/json makes, multi-byte runes,
// invalid UTF-8, HTML characters (not escaped).
var tricky = []string{"", "plain", `a"b\c`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<&>", "é漢字🙂",
	"\u2028\u2029", "bad\xff\xfeutf8", "\xe2\x80", "line\nbreak \"quoted\""}

func TestChunkFastPathMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string {
		if rng.IntN(3) == 0 {
			b := make([]byte, rng.IntN(12))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			return string(b)
		}
		return tricky[rng.IntN(len(tricky))]
	}
	opt := func() *string {
		if rng.IntN(2) == 0 {
			return nil
		}
		return strPtr(pick())
	}
	for range 2000 {
		chat := &ChatCompletionChunk{ID: pick(), Object: "chat.completion.chunk", Created: rng.Int64(), Model: pick(), SystemFingerprint: opt()}
		comp := &Completion{ID: pick(), Object: "text_completion", Created: rng.Int64N(1 << 40), Model: pick(), SystemFingerprint: opt()}
		if rng.IntN(8) > 0 {
			chat.Choices, comp.Choices = []ChatChunkChoice{}, []CompletionChoice{}
			for j := range rng.IntN(3) {
				d := ChatDelta{Content: opt(), ReasoningContent: opt()}
				if rng.IntN(2) == 0 {
					d.Role = "assistant"
				}
				chat.Choices = append(chat.Choices, ChatChunkChoice{Index: j, Delta: d, FinishReason: opt()})
				comp.Choices = append(comp.Choices, CompletionChoice{Index: j, Text: pick(), FinishReason: opt()})
			}
		}
		for _, v := range []any{chat, comp} {
			fast, ok := appendChunkJSON(nil, v)
			if !ok {
				t.Fatalf("%T without usage, nvext or logprobs took the slow path", v)
			}
			if want := reflectEncode(t, v); !bytes.Equal(fast, want) {
				t.Fatalf("%T:\n fast %s\n want %s", v, fast, want)
			}
		}
	}
}

func TestChunkFastPathLeavesTheRest(t *testing.T) {
	for _, v := range []any{
		&ChatCompletionChunk{Usage: &Usage{TotalTokens: 3}},
		&ChatCompletionChunk{NvExt: json.RawMessage(`{"worker_id":1}`)},
		&ChatCompletionChunk{Choices: []ChatChunkChoice{{Logprobs: &ChatLogprobs{}}}},
		&ChatCompletionChunk{Choices: []ChatChunkChoice{{Delta: ChatDelta{ToolCalls: []ToolCall{{}}}}}},
		&ChatCompletionChunk{Choices: []ChatChunkChoice{{Delta: ChatDelta{FunctionCall: &FunctionCall{Name: "f", Arguments: json.RawMessage(`"{}"`)}}}}},
		&Completion{Usage: &Usage{}},
		&Completion{Choices: []CompletionChoice{{Logprobs: &CompletionLogprobs{}}}},
		ChatCompletionChunk{}, "text",
	} {
		if b, ok := appendChunkJSON(nil, v); ok || len(b) > 0 {
			t.Errorf("%T took the fast path: %s", v, b)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, v); err != nil || !bytes.Equal(buf.Bytes(), reflectEncode(t, v)) {
			t.Errorf("Encode(%T) = %s, %v; want encoding/json's output", v, buf.Bytes(), err)
		}
	}
}

func FuzzChunkFastPath(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, content, model string) {
		v := &ChatCompletionChunk{ID: "chatcmpl-1", Object: "chat.completion.chunk", Model: model,
			Choices: []ChatChunkChoice{{Delta: ChatDelta{Content: &content}}}}
		fast, _ := appendChunkJSON(nil, v)
		if want := reflectEncode(t, v); !bytes.Equal(fast, want) {
			t.Fatalf("fast %s\nwant %s", fast, want)
		}
	})
}

func BenchmarkEncodeChunk(b *testing.B) {
	content := " world"
	v := &ChatCompletionChunk{ID: "chatcmpl-6d30c43f-8244-4b6b-99ba-33111937b8e9", Object: "chat.completion.chunk", Created: 1795271010,
		Model: "demo", Choices: []ChatChunkChoice{{Delta: ChatDelta{Content: &content}}}}
	b.Run("fast", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			_ = Encode(&buf, v)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(v)
		}
	})
}
