package preprocessor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// bigChat returns a chat request of about size bytes of message text:
// alternating user/assistant turns cut from the tokenizer's test corpus
// (prose in many languages, code, JSON).
func bigChat(b *testing.B, size int) *openai.ChatCompletionRequest {
	b.Helper()
	var corpus strings.Builder
	for _, f := range []string{"prose.txt", "code.txt", "synthetic.txt"} {
		data, err := os.ReadFile(filepath.Join("tokenizer", "testdata", "corpus", f))
		if err != nil {
			b.Fatal(err)
		}
		corpus.Write(data)
	}
	text := []rune(corpus.String())
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var msgs []msg
	total, pos := 0, 0
	for total < size {
		n := 2000 + len(msgs)*37%3000 // turns of 2-5k characters
		if pos+n > len(text) {
			pos = 0
		}
		s := string(text[pos : pos+n])
		pos += n
		role := "user"
		if len(msgs)%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, msg{role, s})
		total += len(s)
	}
	body, _ := json.Marshal(map[string]any{"model": "qwen3", "messages": msgs})
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		b.Fatal(err)
	}
	return &req
}

// BenchmarkPrepareChat220KB measures the whole input side of a chat
// request (template render + tokenize + build) for a 220 KB conversation
// with the Qwen3 model files, and reports p50/p99 per request.
func BenchmarkPrepareChat220KB(b *testing.B) {
	dir := filepath.Join(needShared(b, "models"), "qwen3")
	m := loadModel(b, dir, modelcard.Options{ContextLength: 1 << 20})
	req := bigChat(b, 220<<10)
	p, err := m.PrepareChat(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p.Prompt)))
	b.ReportMetric(float64(len(p.Request.TokenIDs)), "prompt-tokens")
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := m.PrepareChat(req); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRenderChat220KB isolates the template render of the same
// conversation.
func BenchmarkRenderChat220KB(b *testing.B) {
	dir := filepath.Join(needShared(b, "models"), "qwen3")
	m := loadModel(b, dir, modelcard.Options{ContextLength: 1 << 20})
	req := bigChat(b, 220<<10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.RenderChat(req); err != nil {
			b.Fatal(err)
		}
	}
}
