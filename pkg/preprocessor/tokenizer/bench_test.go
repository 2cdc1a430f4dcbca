package tokenizer_test

// Benchmarks on the parity corpus (testdata/golden/cases.json, all cases
// joined with "\n", ~120 KB). Compare with scripts/tokenizer/bench.mjs, which
// measures HF npm tokenizers on the same text, on the same machine:
//
//	go test -run '^$' -bench . -benchtime 3x ./pkg/preprocessor/tokenizer/
//	GOMAXPROCS=1 go test -run '^$' -bench 'Encode' ./pkg/preprocessor/tokenizer/
//
// MB/s is input bytes per second (b.SetBytes). BenchmarkEncodeChunks encodes
// ~1 KB chunks one after another (what bench.mjs does with encodeBatch on one
// rayon thread); BenchmarkEncodeWhole encodes the whole corpus in one call.

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

var benchModels = []string{
	"llama-3-8b-instruct",
	"qwen2.5-instruct",
	"llama-2-hf-internal-testing",
	"bert-base-uncased",
	"t5-small",
	"phi-2",
}

// chunkText splits s into pieces of about n bytes, cutting after a newline
// or space where possible (never inside a UTF-8 sequence). bench.mjs uses
// the same rule.
func chunkText(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		if len(s) <= n {
			out = append(out, s)
			break
		}
		cut := -1
		if i := strings.LastIndexByte(s[:n], '\n'); i >= n/2 {
			cut = i + 1
		} else if i := strings.LastIndexByte(s[:n], ' '); i >= n/2 {
			cut = i + 1
		} else {
			cut = n
			for cut < len(s) && s[cut]&0xC0 == 0x80 {
				cut++
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

func benchTokenizer(b *testing.B, model string) *tokenizer.Tokenizer {
	b.Helper()
	root := requireModelsRoot(b)
	p := modelPath(root, model)
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s absent", p)
	}
	tok, err := tokenizer.FromFile(p)
	if err != nil {
		b.Skipf("FromFile(%s): %v", model, err)
	}
	return tok
}

func BenchmarkEncodeChunks(b *testing.B) {
	text := corpusText(b)
	chunks := chunkText(text, 1024)
	for _, model := range benchModels {
		b.Run(model, func(b *testing.B) {
			tok := benchTokenizer(b, model)
			if _, err := tok.Encode(chunks[0], false); err != nil {
				b.Skipf("Encode: %v", err)
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			b.ResetTimer()
			ntok := 0
			for b.Loop() {
				ntok = 0
				for _, c := range chunks {
					ids, err := tok.Encode(c, false)
					if err != nil {
						b.Fatal(err)
					}
					ntok += len(ids)
				}
			}
			b.ReportMetric(float64(ntok)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mtok/s")
		})
	}
}

func BenchmarkEncodeWhole(b *testing.B) {
	text := corpusText(b)
	for _, model := range benchModels {
		b.Run(model, func(b *testing.B) {
			tok := benchTokenizer(b, model)
			if _, err := tok.Encode("warm up", false); err != nil {
				b.Skipf("Encode: %v", err)
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tok.Encode(text, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode220KB encodes, with Qwen3's tokenizer, one 220 KB chat
// prompt in one call: the corpus cut into turns of about 3 KB between
// <|im_start|> and <|im_end|> (added tokens), the size of the
// Preprocessing benchmark's prompt (pkg/preprocessor,
// BenchmarkPrepareChat220KB). BenchmarkEncode220KBText encodes the corpus
// repeated (few added tokens: the cuts are inside segments). Texts of
// 32 KB or more are encoded on GOMAXPROCS goroutines; compare one core
// with two:
//
//	go test -run '^$' -bench Encode220KB -cpu 1,2 -count 8 ./pkg/preprocessor/tokenizer/
//
// These two loop over b.N and have no sub-benchmarks: with b.Loop or
// b.Run, every -cpu value runs with the GOMAXPROCS of the last one
// (golang/go#49980).
func BenchmarkEncode220KB(b *testing.B) { benchEncode220KB(b, true) }

// BenchmarkEncode220KBText: see BenchmarkEncode220KB.
func BenchmarkEncode220KBText(b *testing.B) { benchEncode220KB(b, false) }

func benchEncode220KB(b *testing.B, chat bool) {
	corpus := corpusText(b)
	const size = 220 << 10
	text := strings.Repeat(corpus+"\n", size/len(corpus)+1)
	for i := size; i < len(text); i++ {
		if utf8.RuneStart(text[i]) {
			text = text[:i]
			break
		}
	}
	if chat {
		text = chatText(text, 3000)
	}
	tok := benchTokenizer(b, "qwen3")
	ids, err := tok.Encode(text, false)
	if err != nil {
		b.Skipf("Encode: %v", err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := tok.Encode(text, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids)), "tokens")
}

// chatText wraps pieces of text of about n bytes in Qwen-style turns, so
// that added tokens separate them (they are ordinary text to tokenizers
// without these added tokens).
func chatText(text string, n int) string {
	var b strings.Builder
	for i, c := range chunkText(text, n) {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", role, c)
	}
	return b.String()
}

// BenchmarkEncodeParallel runs the chunked encode from all goroutines
// (GOMAXPROCS) on one shared Tokenizer.
func BenchmarkEncodeParallel(b *testing.B) {
	text := corpusText(b)
	chunks := chunkText(text, 1024)
	for _, model := range []string{"llama-3-8b-instruct", "qwen2.5-instruct"} {
		b.Run(model, func(b *testing.B) {
			tok := benchTokenizer(b, model)
			if _, err := tok.Encode(chunks[0], false); err != nil {
				b.Skipf("Encode: %v", err)
			}
			b.SetBytes(int64(len(text)) / int64(len(chunks)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := tok.Encode(chunks[i%len(chunks)], false); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	text := corpusText(b)
	for _, model := range []string{"llama-3-8b-instruct", "qwen2.5-instruct", "llama-2-hf-internal-testing"} {
		b.Run(model, func(b *testing.B) {
			tok := benchTokenizer(b, model)
			ids, err := tok.Encode(text, false)
			if err != nil {
				b.Skipf("Encode: %v", err)
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tok.Decode(ids, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeStream feeds the corpus ids one at a time to a streaming
// decoder, if the API has one. The method is looked up by reflection so this
// file compiles whatever its exact signature is: NewDecodeStream with zero
// or one bool parameter (skipSpecialTokens; trailing variadic parameters are
// left empty) returning a stream (and
// optionally an error); the stream needs a Step/Next/Push/Add method taking
// one uint32 (or []uint32). Skips otherwise.
func BenchmarkDecodeStream(b *testing.B) {
	text := corpusText(b)
	for _, model := range []string{"llama-3-8b-instruct", "qwen2.5-instruct", "llama-2-hf-internal-testing"} {
		b.Run(model, func(b *testing.B) {
			tok := benchTokenizer(b, model)
			ids, err := tok.Encode(text, false)
			if err != nil {
				b.Skipf("Encode: %v", err)
			}
			newStream, step, err := decodeStreamAPI(tok)
			if err != nil {
				b.Skip(err)
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				st := newStream()
				for _, id := range ids {
					if err := step(st, id); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ids)), "ns/token")
		})
	}
}

func decodeStreamAPI(tok *tokenizer.Tokenizer) (func() reflect.Value, func(reflect.Value, uint32) error, error) {
	m := reflect.ValueOf(tok).MethodByName("NewDecodeStream")
	if !m.IsValid() {
		return nil, nil, fmt.Errorf("(*Tokenizer).NewDecodeStream does not exist: skipping streaming decode benchmark")
	}
	mt := m.Type()
	var args []reflect.Value
	nIn := mt.NumIn()
	if mt.IsVariadic() {
		nIn-- // e.g. promptIDs ...uint32: call without them
	}
	switch {
	case nIn == 0:
	case nIn == 1 && mt.In(0).Kind() == reflect.Bool:
		args = []reflect.Value{reflect.ValueOf(false)}
	default:
		return nil, nil, fmt.Errorf("NewDecodeStream has unsupported signature %v", mt)
	}
	if mt.NumOut() < 1 || mt.NumOut() > 2 {
		return nil, nil, fmt.Errorf("NewDecodeStream has unsupported signature %v", mt)
	}
	st := mt.Out(0)
	var stepM reflect.Method
	found := false
	for _, name := range []string{"Step", "Next", "Push", "Add", "Decode"} {
		if sm, ok := st.MethodByName(name); ok && sm.Type.NumIn() == 2 {
			stepM, found = sm, true
			break
		}
	}
	if !found {
		return nil, nil, fmt.Errorf("stream type %v has no Step(id) method", st)
	}
	in := stepM.Type.In(1)
	newStream := func() reflect.Value {
		out := m.Call(args)
		return out[0]
	}
	errType := reflect.TypeFor[error]()
	step := func(s reflect.Value, id uint32) error {
		var arg reflect.Value
		switch {
		case in.Kind() == reflect.Uint32:
			arg = reflect.ValueOf(id).Convert(in)
		case in.Kind() == reflect.Slice && in.Elem().Kind() == reflect.Uint32:
			arg = reflect.ValueOf([]uint32{id}).Convert(in)
		default:
			return fmt.Errorf("unsupported Step parameter %v", in)
		}
		out := s.MethodByName(stepM.Name).Call([]reflect.Value{arg})
		for _, o := range out {
			if o.Type().Implements(errType) && !o.IsNil() {
				return o.Interface().(error)
			}
		}
		return nil
	}
	return newStream, step, nil
}

func BenchmarkFromFile(b *testing.B) {
	root := requireModelsRoot(b)
	for _, model := range []string{"qwen2.5-instruct", "qwen3", "llama-3-8b-instruct"} {
		b.Run(model, func(b *testing.B) {
			p := modelPath(root, model)
			st, err := os.Stat(p)
			if err != nil {
				b.Skipf("%s absent", p)
			}
			if _, err := tokenizer.FromFile(p); err != nil {
				b.Skipf("FromFile: %v", err)
			}
			b.SetBytes(st.Size())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tokenizer.FromFile(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
