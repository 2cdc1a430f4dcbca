package template

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRenderQwen3_50Messages measures one render of a 50-message
// conversation with the cached Qwen3 chat template (compile excluded).
// Run: go test -run '^$' -bench Render ./pkg/preprocessor/template/
func BenchmarkRenderQwen3_50Messages(b *testing.B) {
	cfgB, err := os.ReadFile(filepath.Join(gateDir, "../models/qwen3/tokenizer_config.json"))
	if err != nil {
		b.Skipf("model data absent: %v", err)
	}
	cfg := NewOrderedMap()
	if err := cfg.UnmarshalJSON(cfgB); err != nil {
		b.Fatal(err)
	}
	src, _ := cfg.Get("chat_template")
	tmpl, err := Compile(src.(string), Options{})
	if err != nil {
		b.Fatal(err)
	}
	msgs := []any{}
	for i := 0; i < 50; i++ {
		m := NewOrderedMap()
		if i%2 == 0 {
			m.Set("role", "user")
		} else {
			m.Set("role", "assistant")
		}
		m.Set("content", fmt.Sprintf("message number %d with some ordinary text in it.", i))
		msgs = append(msgs, m)
	}
	ctx := NewOrderedMap()
	ctx.Set("messages", msgs)
	ctx.Set("add_generation_prompt", true)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
