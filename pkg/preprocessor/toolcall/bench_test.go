package toolcall_test

import (
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// BenchmarkLongCall streams a call with 100 KB of arguments (a coding
// agent writing a file) in 4-byte deltas: the held text is rescanned on
// every delta only from where the previous scan stopped.
func BenchmarkLongCall(b *testing.B) {
	text := strings.Repeat("abcd {efgh} ", 8500)
	outputs := map[string]string{
		"hermes":      `<tool_call>{"name": "write", "arguments": {"text": "` + text + `"}}</tool_call>`,
		"llama3_json": `{"name": "write", "parameters": {"text": "` + text + `"}}`,
		"pythonic":    `[write(text="` + text + `")]`,
		"qwen3_coder": "<tool_call>\n<function=write>\n<parameter=text>\n" + text + "\n</parameter>\n</function>\n</tool_call>",
		"harmony":     `<|channel|>commentary to=functions.write <|constrain|>json<|message|>{"text": "` + text + `"}<|call|>`,
	}
	for name, out := range outputs {
		p, _ := toolcall.Lookup(name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				s := p.NewStream(nil)
				var calls []toolcall.Call
				for i := 0; i < len(out); i += 4 {
					_, k := s.Push(out[i:min(i+4, len(out))])
					calls = append(calls, k...)
				}
				_, k := s.Finish()
				if len(calls)+len(k) != 1 {
					b.Fatalf("%d calls, want 1", len(calls)+len(k))
				}
			}
		})
	}
}
