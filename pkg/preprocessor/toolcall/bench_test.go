package toolcall_test

import (
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// BenchmarkLongCall streams a call with 100 KB of arguments (a coding
// agent writing a file) in 4-byte deltas: held text is never rescanned
// from its start, and a committed call's arguments are passed on as they
// come, so the cost is linear in the output. Run with
// go test -bench LongCall ./pkg/preprocessor/toolcall.
func BenchmarkLongCall(b *testing.B) {
	text := strings.Repeat("abcd {efgh} ", 8500)
	outputs := map[string]string{
		"hermes":        `<tool_call>{"name": "write", "arguments": {"text": "` + text + `"}}</tool_call>`,
		"llama3_json":   `{"name": "write", "parameters": {"text": "` + text + `"}}`,
		"mistral":       `[TOOL_CALLS]write[ARGS]{"text": "` + text + `"}`,
		"deepseek_v3_1": `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write<｜tool▁sep｜>{"text": "` + text + `"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
		"pythonic":      `[write(text="` + text + `")]`,
		"qwen3_coder":   "<tool_call>\n<function=write>\n<parameter=text>\n" + text + "\n</parameter>\n</function>\n</tool_call>",
		"harmony":       `<|channel|>commentary to=functions.write <|constrain|>json<|message|>{"text": "` + text + `"}<|call|>`,
	}
	for name, out := range outputs {
		p, _ := toolcall.Lookup(name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				s := p.NewStream(nil)
				calls, args := 0, 0
				count := func(ds []toolcall.Delta) {
					for _, d := range ds {
						if d.Call != nil {
							if d.Call.Name != "" {
								calls++
							}
							args += len(d.Call.Arguments)
						}
					}
				}
				for i := 0; i < len(out); i += 4 {
					count(s.Push(out[i:min(i+4, len(out))]))
				}
				count(s.Finish())
				if calls != 1 || args < len(text) {
					b.Fatalf("%d calls with %d bytes of arguments, want 1 with the text", calls, args)
				}
			}
		})
	}
}
