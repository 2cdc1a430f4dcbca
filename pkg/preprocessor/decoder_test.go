package preprocessor

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// Ids of the fixture tokenizer (testdata/decoder), as in the reference
// tests (lib/llm/tests/test_stop_behavior.rs).
const (
	tokHi      uint32 = 1  // "hi"
	tokSTOP    uint32 = 2  // "STOP"
	tokThere   uint32 = 3  // "there"
	tokDelta   uint32 = 10 // " delta"
	tokEpsilon uint32 = 11 // " epsilon"
	tokZeta    uint32 = 12 // " zeta"
	tokEta     uint32 = 13 // " eta"
	tokTheta   uint32 = 14 // " theta"
	tokO       uint32 = 15 // "o"
	tokZZ      uint32 = 16 // "zz"
	tokEOS     uint32 = 99 // "</s>", special
)

// Tokenizers the tests use: the fixture, and real byte-level BPE
// tokenizers from the shared test data (skipped when absent).
const (
	fixtureTok = "fixture"
	llama3Tok  = "llama-3-8b-instruct"
	qwen3Tok   = "qwen3"
)

const (
	llamaEOTID  uint32 = 128009 // <|eot_id|>
	qwenIMEndID uint32 = 151645 // <|im_end|>
)

var (
	decoderTokMu    sync.Mutex
	decoderTokCache = map[string]*tokenizer.Tokenizer{}
)

// loadDecoderTok returns the named tokenizer, skipping the test when a real
// model's files are not available.
func loadDecoderTok(tb testing.TB, name string) *tokenizer.Tokenizer {
	tb.Helper()
	decoderTokMu.Lock()
	defer decoderTokMu.Unlock()
	if tok, ok := decoderTokCache[name]; ok {
		return tok
	}
	path := filepath.Join("testdata", "decoder", "tokenizer.json")
	if name != fixtureTok {
		path = filepath.Join("..", "..", "..", "shared", "testdata", "models", name, "tokenizer.json")
		if _, err := os.Stat(path); err != nil {
			tb.Skipf("model %s not available (%s): %v", name, path, err)
		}
	}
	tok, err := tokenizer.FromFile(path)
	if err != nil {
		tb.Fatalf("load %s: %v", name, err)
	}
	decoderTokCache[name] = tok
	return tok
}

// decoderTranscript is what a client sees of a choice.
type decoderTranscript struct {
	Texts      []string // Delta.Text of every output, in order
	Finish     *backend.FinishReason
	StopReason any
	Local      bool // StoppedLocally was set
	Accepted   int  // ids counted for usage
}

// runDecoder feeds outs to d and records the transcript. It checks the invariants
// every stream must keep: exactly one finish, nothing after it, LogProbs
// aligned with TokenIDs.
func runDecoder(t *testing.T, d *Decoder, outs []*backend.Output) decoderTranscript {
	t.Helper()
	var tr decoderTranscript
	for i, out := range outs {
		ended := d.Done()
		dl, err := d.Step(out)
		if err != nil {
			t.Fatalf("output %d: Step: %v", i, err)
		}
		if ended {
			if diff := cmp.Diff(Delta{}, dl); diff != "" {
				t.Errorf("output %d after the end: delta not empty (-want +got):\n%s", i, diff)
			}
		}
		if dl.LogProbs != nil && len(dl.LogProbs) != len(dl.TokenIDs) {
			t.Errorf("output %d: %d logprobs for %d ids", i, len(dl.LogProbs), len(dl.TokenIDs))
		}
		tr.Texts = append(tr.Texts, dl.Text)
		tr.Accepted += len(dl.TokenIDs)
		if dl.Finish != nil {
			if tr.Finish != nil {
				t.Errorf("output %d: second finish %v", i, dl.Finish)
			}
			tr.Finish, tr.StopReason, tr.Local = dl.Finish, dl.StopReason, dl.StoppedLocally
			if !d.Done() {
				t.Errorf("output %d: finish set but Done() is false", i)
			}
		}
	}
	return tr
}

// perTokenOutputs returns one output per id of text, as engines stream.
func perTokenOutputs(t *testing.T, tok *tokenizer.Tokenizer, text string) []*backend.Output {
	t.Helper()
	ids, err := tok.Encode(text, false)
	if err != nil {
		t.Fatalf("encode %q: %v", text, err)
	}
	outs := make([]*backend.Output, len(ids))
	for i, id := range ids {
		outs[i] = backend.Tokens(id)
	}
	return outs
}

func engineText(s string, ids ...uint32) *backend.Output {
	return &backend.Output{TokenIDs: ids, Text: &s}
}

func finishOf(k backend.FinishKind) *backend.FinishReason { return &backend.FinishReason{Kind: k} }

var finishStop = finishOf(backend.FinishStop)

type decoderCase struct {
	name  string
	model string
	opts  DecoderOptions
	gen   string            // encoded with model, one id per output, fed first
	outs  []*backend.Output // fed after gen
	want  decoderTranscript
}

func runDecoderCases(t *testing.T, cases []decoderCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := loadDecoderTok(t, tc.model)
			var outs []*backend.Output
			if tc.gen != "" {
				outs = perTokenOutputs(t, tok, tc.gen)
			}
			outs = append(outs, tc.outs...)
			got := runDecoder(t, NewDecoder(tok, tc.opts), outs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecoderStopBehavior ports the reference stop-behaviour tests: all ids
// of a case arrive in one output, special tokens are not skipped.
func TestDecoderStopBehavior(t *testing.T) {
	runDecoderCases(t, []decoderCase{
		{
			name:  "normal_completion_no_stop",
			model: fixtureTok,
			outs:  []*backend.Output{backend.Tokens(tokHi, tokThere)},
			want:  decoderTranscript{Texts: []string{"hithere"}, Accepted: 2},
		},
		{
			name:  "hidden_stop_token_excluded",
			model: fixtureTok,
			opts:  DecoderOptions{HiddenStopIDs: []uint32{tokEOS}},
			outs:  []*backend.Output{backend.Tokens(tokHi, tokEOS)},
			want:  decoderTranscript{Texts: []string{"hi"}, Finish: finishStop, StopReason: tokEOS, Local: true, Accepted: 2},
		},
		{
			name:  "include_stop_str_false_excludes",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"STOP"}},
			outs:  []*backend.Output{backend.Tokens(tokHi, tokSTOP, tokThere)},
			want:  decoderTranscript{Texts: []string{"hi"}, Finish: finishStop, StopReason: "STOP", Local: true, Accepted: 2},
		},
		{
			name:  "include_stop_str_true_includes",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"STOP"}, IncludeStopStr: true},
			outs:  []*backend.Output{backend.Tokens(tokHi, tokSTOP, tokThere)},
			want:  decoderTranscript{Texts: []string{"hiSTOP"}, Finish: finishStop, StopReason: "STOP", Local: true, Accepted: 2},
		},
		{
			name:  "trailing_tokens_ignored_after_stop",
			model: fixtureTok,
			opts:  DecoderOptions{HiddenStopIDs: []uint32{tokEOS}},
			outs:  []*backend.Output{backend.Tokens(tokHi, tokEOS, tokThere), backend.Tokens(tokThere), backend.Length(tokThere)},
			want:  decoderTranscript{Texts: []string{"hi", "", ""}, Finish: finishStop, StopReason: tokEOS, Local: true, Accepted: 2},
		},
		{
			name:  "min_tokens_delays_stop",
			model: fixtureTok,
			opts:  DecoderOptions{MinTokens: 3, HiddenStopIDs: []uint32{tokEOS}},
			outs:  []*backend.Output{backend.Tokens(tokHi, tokEOS)},
			want:  decoderTranscript{Texts: []string{"hi</s>"}, Accepted: 2},
		},
		{
			name:  "stop_token_priority_over_sequence",
			model: fixtureTok,
			opts:  DecoderOptions{HiddenStopIDs: []uint32{tokSTOP}, Stop: []string{"STOP"}},
			outs:  []*backend.Output{backend.Tokens(tokHi, tokSTOP)},
			want:  decoderTranscript{Texts: []string{"hi"}, Finish: finishStop, StopReason: tokSTOP, Local: true, Accepted: 2},
		},
		// The reference file's later regression tests.
		{
			name:  "hidden_stop_sequence_split_across_tokens_is_not_leaked",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{" zeta eta theta"}},
			outs:  []*backend.Output{backend.Tokens(tokDelta, tokEpsilon, tokZeta, tokEta, tokTheta)},
			want:  decoderTranscript{Texts: []string{" delta epsilon"}, Finish: finishStop, StopReason: " zeta eta theta", Local: true, Accepted: 5},
		},
		{
			name:  "withheld_prefix_is_released_once_it_cannot_complete",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"ozzy"}},
			outs:  []*backend.Output{backend.Tokens(tokO, tokThere)},
			want:  decoderTranscript{Texts: []string{"othere"}, Accepted: 2},
		},
	})
}

// TestDecoderMinTokens pins min_tokens=N: the first N tokens are never
// stopped on, token N+1 is.
func TestDecoderMinTokens(t *testing.T) {
	runDecoderCases(t, []decoderCase{
		{
			name:  "hidden id stops at token N+1",
			model: fixtureTok,
			opts:  DecoderOptions{MinTokens: 2, HiddenStopIDs: []uint32{tokEOS}},
			outs:  []*backend.Output{backend.Tokens(tokEOS), backend.Tokens(tokEOS), backend.Tokens(tokEOS), backend.Tokens(tokHi)},
			want:  decoderTranscript{Texts: []string{"</s>", "</s>", "", ""}, Finish: finishStop, StopReason: tokEOS, Local: true, Accepted: 3},
		},
		{
			name:  "visible id stops at token N+1",
			model: fixtureTok,
			opts:  DecoderOptions{MinTokens: 1, VisibleStopIDs: []uint32{tokSTOP}},
			outs:  []*backend.Output{backend.Tokens(tokSTOP, tokSTOP, tokHi)},
			want:  decoderTranscript{Texts: []string{"STOPSTOP"}, Finish: finishStop, StopReason: tokSTOP, Local: true, Accepted: 2},
		},
		{
			name:  "stop string inside the first N tokens does not match",
			model: fixtureTok,
			opts:  DecoderOptions{MinTokens: 1, Stop: []string{"hi"}},
			outs:  []*backend.Output{backend.Tokens(tokHi), backend.Tokens(tokThere), backend.Tokens(tokHi), backend.Tokens(tokThere)},
			want:  decoderTranscript{Texts: []string{"hi", "there", "", ""}, Finish: finishStop, StopReason: "hi", Local: true, Accepted: 3},
		},
		{
			name:  "stop string completed after the first N tokens matches",
			model: fixtureTok,
			opts:  DecoderOptions{MinTokens: 1, Stop: []string{"hit"}},
			outs:  []*backend.Output{backend.Tokens(tokHi), backend.Tokens(tokThere)},
			want:  decoderTranscript{Texts: []string{"", ""}, Finish: finishStop, StopReason: "hit", Local: true, Accepted: 2},
		},
	})
}

// TestDecoderGolden pins transcripts (the Delta texts of each output, then
// the finish) for the cases a client can tell apart.
func TestDecoderGolden(t *testing.T) {
	runDecoderCases(t, []decoderCase{
		{
			name:  "emoji and CJK split across byte-level tokens (llama-3)",
			model: llama3Tok,
			gen:   "Hi 🎉 party 你好世界!",
			outs:  []*backend.Output{backend.EOS()},
			want: decoderTranscript{
				Texts:    []string{"Hi", "", "", " 🎉", " party", " 你", "好", "世界", "!", ""},
				Finish:   finishOf(backend.FinishEOS),
				Accepted: 9,
			},
		},
		{
			name:  "emoji and CJK (qwen3)",
			model: qwen3Tok,
			gen:   "Hi 🎉 party 🦄🦄 日本語です。",
			outs:  []*backend.Output{backend.Length()},
			want: decoderTranscript{
				Texts:    []string{"Hi", "", "", " 🎉", " party", "", "", " 🦄", "🦄", " 日", "本", "語", "です", "。", ""},
				Finish:   finishOf(backend.FinishLength),
				Accepted: 14,
			},
		},
		{
			name:  "stop string whose token is split inside an emoji",
			model: llama3Tok,
			opts:  DecoderOptions{Stop: []string{"🎉!"}},
			gen:   "a🎉!b",
			want:  decoderTranscript{Texts: []string{"a", "", "", "", "", ""}, Finish: finishStop, StopReason: "🎉!", Local: true, Accepted: 5},
		},
		{
			name:  "stop string starting with a CJK character",
			model: llama3Tok,
			opts:  DecoderOptions{Stop: []string{"好世"}},
			gen:   "x你好世界y",
			want:  decoderTranscript{Texts: []string{"x", "你", "", "", ""}, Finish: finishStop, StopReason: "好世", Local: true, Accepted: 4},
		},
		{
			name:  "stop string spanning two tokens",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"ta eps"}},
			outs:  []*backend.Output{backend.Tokens(tokDelta), backend.Tokens(tokEpsilon), backend.Tokens(tokZeta)},
			want:  decoderTranscript{Texts: []string{" del", "", ""}, Finish: finishStop, StopReason: "ta eps", Local: true, Accepted: 2},
		},
		{
			name:  "stop string spanning three tokens, hidden",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{" zeta eta theta"}},
			outs:  []*backend.Output{backend.Tokens(tokDelta), backend.Tokens(tokEpsilon), backend.Tokens(tokZeta), backend.Tokens(tokEta), backend.Tokens(tokTheta)},
			want:  decoderTranscript{Texts: []string{" delta", " epsilon", "", "", ""}, Finish: finishStop, StopReason: " zeta eta theta", Local: true, Accepted: 5},
		},
		{
			name:  "stop string spanning three tokens, visible",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{" zeta eta theta"}, IncludeStopStr: true},
			outs:  []*backend.Output{backend.Tokens(tokDelta), backend.Tokens(tokEpsilon), backend.Tokens(tokZeta), backend.Tokens(tokEta), backend.Tokens(tokTheta)},
			want:  decoderTranscript{Texts: []string{" delta", " epsilon", "", "", " zeta eta theta"}, Finish: finishStop, StopReason: " zeta eta theta", Local: true, Accepted: 5},
		},
		{
			name:  "stop string spanning three tokens of a real tokenizer",
			model: llama3Tok,
			opts:  DecoderOptions{Stop: []string{"own fox ju"}},
			gen:   "The quick brown fox jumps over",
			want:  decoderTranscript{Texts: []string{"The", " quick", " br", "", "", ""}, Finish: finishStop, StopReason: "own fox ju", Local: true, Accepted: 5},
		},
		{
			name:  "stop string at the very first token",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"hi"}},
			outs:  []*backend.Output{backend.Tokens(tokHi), backend.Tokens(tokThere), backend.EOS()},
			want:  decoderTranscript{Texts: []string{"", "", ""}, Finish: finishStop, StopReason: "hi", Local: true, Accepted: 1},
		},
		{
			name:  "stop string at the very first token, visible",
			model: llama3Tok,
			opts:  DecoderOptions{Stop: []string{"Hello"}, IncludeStopStr: true},
			gen:   "Hello world",
			want:  decoderTranscript{Texts: []string{"Hello", ""}, Finish: finishStop, StopReason: "Hello", Local: true, Accepted: 1},
		},
		{
			name:  "partial stop prefix released",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"ozzy"}},
			outs:  []*backend.Output{backend.Tokens(tokO), backend.Tokens(tokZZ), backend.Tokens(tokThere), backend.Tokens(tokO), backend.EOS()},
			want:  decoderTranscript{Texts: []string{"", "", "ozzthere", "", "o"}, Finish: finishOf(backend.FinishEOS), Accepted: 4},
		},
		{
			name:  "EOS hidden (llama-3 eot via DecoderOptionsFor)",
			model: llama3Tok,
			opts: DecoderOptionsFor(&backend.Request{
				TokenIDs:    []uint32{9906},
				EOSTokenIDs: []uint32{llamaEOTID},
			}),
			gen:  " there",
			outs: []*backend.Output{backend.Tokens(llamaEOTID, 13), backend.Tokens(13)},
			want: decoderTranscript{Texts: []string{" there", "", ""}, Finish: finishStop, StopReason: llamaEOTID, Local: true, Accepted: 2},
		},
		{
			name:  "EOS hidden (qwen3 im_end via DecoderOptionsFor)",
			model: qwen3Tok,
			opts:  DecoderOptionsFor(&backend.Request{EOSTokenIDs: []uint32{qwenIMEndID, 151643}}),
			gen:   "Hi there",
			outs:  []*backend.Output{backend.Tokens(qwenIMEndID)},
			want:  decoderTranscript{Texts: []string{"Hi", " there", ""}, Finish: finishStop, StopReason: qwenIMEndID, Local: true, Accepted: 3},
		},
		{
			name:  "engine EOS in the same output as a hidden stop id: not stopped locally",
			model: fixtureTok,
			opts:  DecoderOptions{HiddenStopIDs: []uint32{tokEOS}},
			outs:  []*backend.Output{backend.Tokens(tokHi), backend.EOS(tokEOS)},
			want:  decoderTranscript{Texts: []string{"hi", ""}, Finish: finishStop, StopReason: tokEOS, Accepted: 2},
		},
		{
			name:  "length finish flushes the jail",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{" zeta eta theta"}},
			outs:  []*backend.Output{backend.Tokens(tokDelta), backend.Tokens(tokZeta), backend.Tokens(tokEta), backend.Length()},
			want:  decoderTranscript{Texts: []string{" delta", "", "", " zeta eta"}, Finish: finishOf(backend.FinishLength), Accepted: 3},
		},
		{
			name:  "length finish with its last ids flushes the jail",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{" zeta eta theta"}},
			outs:  []*backend.Output{backend.Tokens(tokDelta), backend.Length(tokZeta, tokEta)},
			want:  decoderTranscript{Texts: []string{" delta", " zeta eta"}, Finish: finishOf(backend.FinishLength), Accepted: 3},
		},
		{
			name:  "engine stop finish passes its stop_reason",
			model: fixtureTok,
			outs: []*backend.Output{backend.Tokens(tokHi), {
				TokenIDs: []uint32{}, FinishReason: finishStop, StopReason: json.RawMessage(`"</answer>"`),
			}},
			want: decoderTranscript{Texts: []string{"hi", ""}, Finish: finishStop, StopReason: "</answer>", Accepted: 1},
		},
		{
			name:  "engine error finish",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"ozzy"}},
			outs:  []*backend.Output{backend.Tokens(tokHi, tokO), backend.Failed("boom")},
			want:  decoderTranscript{Texts: []string{"hi", "o"}, Finish: &backend.FinishReason{Kind: backend.FinishError, Message: "boom"}, Accepted: 2},
		},
		{
			name:  "engine-provided text goes through the jail",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"STOP"}},
			outs:  []*backend.Output{engineText("Hello wor", 7, 8), engineText("ld! ST", 9, 10), engineText("OP more", 11, 12), engineText("ignored", 13)},
			want:  decoderTranscript{Texts: []string{"Hello wor", "ld! ", "", ""}, Finish: finishStop, StopReason: "STOP", Local: true, Accepted: 6},
		},
		{
			name:  "engine-provided text, length flush",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"STOP"}},
			outs:  []*backend.Output{engineText("ab ST", 7), {Text: backend.Ptr(""), TokenIDs: []uint32{}, FinishReason: finishOf(backend.FinishLength)}},
			want:  decoderTranscript{Texts: []string{"ab ", "ST"}, Finish: finishOf(backend.FinishLength), Accepted: 1},
		},
		{
			name:  "engine-provided text with a hidden stop id",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"STOP"}, HiddenStopIDs: []uint32{tokEOS}},
			outs:  []*backend.Output{engineText("done S", 7, tokEOS, 8)},
			want:  decoderTranscript{Texts: []string{"done S"}, Finish: finishStop, StopReason: tokEOS, Local: true, Accepted: 2},
		},
		{
			name:  "several stop strings: the earliest wins",
			model: llama3Tok,
			opts:  DecoderOptions{Stop: []string{"lazy", " over", "fox"}},
			gen:   "The quick brown fox jumps over the lazy dog",
			want:  decoderTranscript{Texts: []string{"The", " quick", " brown", " ", "", "", "", "", ""}, Finish: finishStop, StopReason: "fox", Local: true, Accepted: 4},
		},
		{
			name:  "several stop strings in one piece: the first to end wins",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"abcd", "bc"}},
			outs:  []*backend.Output{engineText("xabcdy", 7)},
			want:  decoderTranscript{Texts: []string{"xa"}, Finish: finishStop, StopReason: "bc", Local: true, Accepted: 1},
		},
		{
			name:  "several stop strings ending together: the longest wins",
			model: fixtureTok,
			opts:  DecoderOptions{Stop: []string{"cd", "bcd"}, IncludeStopStr: true},
			outs:  []*backend.Output{engineText("abcde", 7)},
			want:  decoderTranscript{Texts: []string{"abcd"}, Finish: finishStop, StopReason: "bcd", Local: true, Accepted: 1},
		},
		{
			name:  "ignore_eos via DecoderOptionsFor",
			model: fixtureTok,
			opts: DecoderOptionsFor(&backend.Request{
				StopConditions: backend.StopConditions{
					StopTokenIDs:       []uint32{tokSTOP},
					StopTokenIDsHidden: []uint32{tokEOS},
					IgnoreEOS:          backend.Ptr(true),
				},
				OutputOptions: backend.OutputOptions{SkipSpecialTokens: backend.Ptr(false)},
				EOSTokenIDs:   []uint32{tokEOS},
			}),
			outs: []*backend.Output{backend.Tokens(tokHi, tokEOS), backend.Tokens(tokSTOP, tokThere), backend.Length(tokEOS)},
			want: decoderTranscript{Texts: []string{"hi</s>", "STOPthere", "</s>"}, Finish: finishOf(backend.FinishLength), Accepted: 5},
		},
		{
			name:  "skip special tokens by default via DecoderOptionsFor",
			model: fixtureTok,
			opts:  DecoderOptionsFor(&backend.Request{StopConditions: backend.StopConditions{IgnoreEOS: backend.Ptr(true)}, EOSTokenIDs: []uint32{tokEOS}}),
			outs:  []*backend.Output{backend.Tokens(tokHi, tokEOS, tokThere)},
			want:  decoderTranscript{Texts: []string{"hithere"}, Accepted: 3},
		},
		{
			name:  "keep-alive output",
			model: fixtureTok,
			outs:  []*backend.Output{backend.Tokens(), backend.Tokens(tokHi), {}},
			want:  decoderTranscript{Texts: []string{"", "hi", ""}, Accepted: 1},
		},
	})
}

func TestDecoderLogProbs(t *testing.T) {
	tok := loadDecoderTok(t, fixtureTok)
	d := NewDecoder(tok, DecoderOptions{HiddenStopIDs: []uint32{tokEOS}})
	out := &backend.Output{
		TokenIDs:    []uint32{tokHi, tokEOS, tokThere},
		LogProbs:    []float64{-0.1, -0.2, -0.3},
		TopLogprobs: json.RawMessage(`[[{"token_id":1}],[{"token_id":99}],[{"token_id":3}]]`),
	}
	got, err := d.Step(out)
	if err != nil {
		t.Fatal(err)
	}
	want := Delta{
		Text:           "hi",
		TokenIDs:       []uint32{tokHi, tokEOS},
		LogProbs:       []float64{-0.1, -0.2},
		TopLogprobs:    json.RawMessage(`[[{"token_id":1}],[{"token_id":99}]]`),
		Finish:         finishStop,
		StopReason:     tokEOS,
		StoppedLocally: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
}

func TestDecoderOptionsFor(t *testing.T) {
	tests := []struct {
		name string
		req  backend.Request
		want DecoderOptions
	}{
		{
			name: "defaults",
			req:  backend.Request{TokenIDs: []uint32{5, 6}},
			want: DecoderOptions{PromptIDs: []uint32{5, 6}, SkipSpecialTokens: true},
		},
		{
			name: "all fields",
			req: backend.Request{
				StopConditions: backend.StopConditions{
					Stop:                []string{"###"},
					StopTokenIDs:        []uint32{7, 8},
					StopTokenIDsVisible: []uint32{9},
					StopTokenIDsHidden:  []uint32{8, 100},
					MinTokens:           backend.Ptr[uint32](4),
					IgnoreEOS:           backend.Ptr(false),
				},
				SamplingOptions: backend.SamplingOptions{IncludeStopStrInOutput: backend.Ptr(true)},
				OutputOptions:   backend.OutputOptions{SkipSpecialTokens: backend.Ptr(false)},
				EOSTokenIDs:     []uint32{100, 101},
			},
			want: DecoderOptions{
				Stop:           []string{"###"},
				IncludeStopStr: true,
				HiddenStopIDs:  []uint32{8, 100, 7, 101},
				VisibleStopIDs: []uint32{9},
				MinTokens:      4,
			},
		},
		{
			name: "ignore_eos drops stop, hidden and EOS ids",
			req: backend.Request{
				StopConditions: backend.StopConditions{
					Stop:                []string{"###"},
					StopTokenIDs:        []uint32{7},
					StopTokenIDsVisible: []uint32{9},
					StopTokenIDsHidden:  []uint32{100},
					IgnoreEOS:           backend.Ptr(true),
				},
				EOSTokenIDs: []uint32{100},
			},
			want: DecoderOptions{Stop: []string{"###"}, SkipSpecialTokens: true, VisibleStopIDs: []uint32{9}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DecoderOptionsFor(&tc.req)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecoderHiddenWinsOverVisible: an id in both lists is hidden.
func TestDecoderHiddenWinsOverVisible(t *testing.T) {
	tok := loadDecoderTok(t, fixtureTok)
	d := NewDecoder(tok, DecoderOptions{HiddenStopIDs: []uint32{tokSTOP}, VisibleStopIDs: []uint32{tokSTOP}})
	got := runDecoder(t, d, []*backend.Output{backend.Tokens(tokHi, tokSTOP)})
	want := decoderTranscript{Texts: []string{"hi"}, Finish: finishStop, StopReason: tokSTOP, Local: true, Accepted: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

// TestDecoderPromptSeed: the prompt ids give the first generated token its
// context and their text is never emitted.
func TestDecoderPromptSeed(t *testing.T) {
	tok := loadDecoderTok(t, llama3Tok)
	prompt, err := tok.Encode("Say hi", false)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(tok, DecoderOptions{PromptIDs: prompt})
	got := runDecoder(t, d, perTokenOutputs(t, tok, " there, friend"))
	if s := strings.Join(got.Texts, ""); s != " there, friend" {
		t.Errorf("text = %q, want %q", s, " there, friend")
	}
}

// TestDecoderError: a detokenization error is wrapped, returned, and ends
// the choice. With a ByteFallback decoder, a byte token emitted as valid
// text can later join an invalid byte run and turn into U+FFFD, so the text
// no longer extends what was emitted.
func TestDecoderError(t *testing.T) {
	tok, err := tokenizer.FromFile(filepath.Join("testdata", "decoder", "bytefallback.json"))
	if err != nil {
		t.Fatal(err)
	}
	const a, b, byteA, byte80 = 1, 2, 3, 4
	d := NewDecoder(tok, DecoderOptions{})
	dl, err := d.Step(backend.Tokens(a, byteA, byte80))
	if err != nil || dl.Text != "aA" {
		t.Fatalf("first step: %q, %v; want \"aA\", nil", dl.Text, err)
	}
	_, err = d.Step(backend.Tokens(b))
	if !errors.Is(err, tokenizer.ErrInvalidPrefix) || !strings.HasPrefix(err.Error(), "preprocessor: ") {
		t.Errorf("err = %v, want a wrapped tokenizer.ErrInvalidPrefix", err)
	}
	if !d.Done() {
		t.Error("Done() = false after an error")
	}
	if dl, err := d.Step(backend.Tokens(a)); err != nil || !cmp.Equal(dl, Delta{}) {
		t.Errorf("after the error: %+v, %v; want an empty delta", dl, err)
	}
}

// TestDecoderProperty streams random text of a real tokenizer, cut into
// random outputs, against random stop strings taken from the text, and
// compares with the reference: the full decode cut at the first stop
// occurrence. The text seen so far must always be a prefix of the final
// text, so no part of a hidden stop string ever reaches the client.
func TestDecoderProperty(t *testing.T) {
	for _, model := range []string{llama3Tok, qwen3Tok} {
		t.Run(model, func(t *testing.T) {
			tok := loadDecoderTok(t, model)
			rng := rand.New(rand.NewPCG(1, uint64(len(model))))
			n := 400
			if testing.Short() {
				n = 50
			}
			stopped := 0
			for i := range n {
				if decoderPropertyCase(t, tok, rng, i) {
					stopped++
				}
			}
			t.Logf("%d cases, %d stopped on a stop string", n, stopped)
			if stopped < n/4 {
				t.Errorf("only %d of %d cases stopped: the generator no longer exercises stops", stopped, n)
			}
		})
	}
}

var decoderPieces = []string{
	"the", " cat", " sat", " on", " mat", ".", ",", "!", " ", "\n", "\n\n", "ab", "ba", "aa",
	"🎉", "🦄", "👍🏽", "你好", "世界", "日本語", "です", "。", "é", "naïve", "Ωμέγα", "<", "/", ">", "STOP", "##",
}

func decoderPropertyCase(t *testing.T, tok *tokenizer.Tokenizer, rng *rand.Rand, i int) (stopped bool) {
	t.Helper()
	var sb strings.Builder
	for range 1 + rng.IntN(40) {
		sb.WriteString(decoderPieces[rng.IntN(len(decoderPieces))])
	}
	ids, err := tok.Encode(sb.String(), false)
	if err != nil {
		t.Fatal(err)
	}
	// Per-token text, as the stream decodes it.
	ds := tok.NewDecodeStream(true)
	pieces := make([]string, len(ids))
	full := ""
	for k, id := range ids {
		if pieces[k], err = ds.Step(id); err != nil {
			t.Fatal(err)
		}
		full += pieces[k]
	}
	if ref, _ := tok.Decode(ids, true); ref != full {
		t.Fatalf("case %d: stream decode %q != decode %q", i, full, ref)
	}
	opts := DecoderOptions{IncludeStopStr: rng.IntN(2) == 0, MinTokens: rng.IntN(3)}
	for range 1 + rng.IntN(3) {
		opts.Stop = append(opts.Stop, randomStopString(rng, full))
	}
	want, stopAt, stopped := decoderReference(full, pieces, opts)

	outs := chunkOutputs(rng, ids)
	d := NewDecoder(tok, opts)
	var got string
	accepted := 0
	var last Delta
	for k, out := range outs {
		dl, err := d.Step(out)
		if err != nil {
			t.Fatalf("case %d: output %d: %v", i, k, err)
		}
		got += dl.Text
		accepted += len(dl.TokenIDs)
		if !strings.HasPrefix(want, got) {
			t.Fatalf("case %d (stops %q, include %v, min %d): after output %d the client has %q, not a prefix of %q",
				i, opts.Stop, opts.IncludeStopStr, opts.MinTokens, k, got, want)
		}
		if dl.Finish != nil {
			last = dl
		}
	}
	if got != want {
		t.Fatalf("case %d (stops %q, include %v, min %d): text %q, want %q", i, opts.Stop, opts.IncludeStopStr, opts.MinTokens, got, want)
	}
	wantAccepted, wantKind := len(ids), backend.FinishLength
	if stopped {
		wantAccepted, wantKind = stopAt+1, backend.FinishStop
	}
	if accepted != wantAccepted || last.Finish == nil || last.Finish.Kind != wantKind {
		t.Fatalf("case %d: accepted %d finish %v, want %d %s", i, accepted, last.Finish, wantAccepted, wantKind)
	}
	return stopped
}

// randomStopString returns a stop string: mostly a substring of text (on
// character boundaries), sometimes one that does not occur.
func randomStopString(rng *rand.Rand, text string) string {
	runes := []rune(text)
	if len(runes) == 0 || rng.IntN(5) == 0 {
		return decoderPieces[rng.IntN(len(decoderPieces))] + "~"
	}
	i := rng.IntN(len(runes))
	j := min(len(runes), i+1+rng.IntN(6))
	return string(runes[i:j])
}

// decoderReference cuts full at the first stop occurrence that ends after
// the text of the first MinTokens tokens, found by brute force over end
// positions (longest string first on a tie). It returns the text the
// client must see, the index of the token that completed the stop, and
// whether a stop happened.
func decoderReference(full string, pieces []string, opts DecoderOptions) (string, int, bool) {
	protected := 0
	for k := 0; k < opts.MinTokens && k < len(pieces); k++ {
		protected += len(pieces[k])
	}
	stops := append([]string(nil), opts.Stop...)
	for end := protected + 1; end <= len(full); end++ {
		best := ""
		for _, s := range stops {
			if len(s) > len(best) && strings.HasSuffix(full[:end], s) {
				best = s
			}
		}
		if best == "" {
			continue
		}
		// The token whose text holds byte end-1.
		tokenAt, n := 0, 0
		for k, p := range pieces {
			n += len(p)
			if n >= end {
				tokenAt = k
				break
			}
		}
		if tokenAt < opts.MinTokens {
			continue
		}
		if opts.IncludeStopStr {
			return full[:end], tokenAt, true
		}
		return full[:end-len(best)], tokenAt, true
	}
	return full, 0, false
}

// chunkOutputs cuts ids into outputs of 1 to 4 ids; the last one finishes with
// length.
func chunkOutputs(rng *rand.Rand, ids []uint32) []*backend.Output {
	var outs []*backend.Output
	for len(ids) > 0 {
		n := min(len(ids), 1+rng.IntN(4))
		outs = append(outs, backend.Tokens(ids[:n]...))
		ids = ids[n:]
	}
	return append(outs, backend.Length())
}

// BenchmarkDecoderStep measures one token through the Decoder (decode
// stream, stop ids, stop-string jail) with the repository's demo tokenizer.
func BenchmarkDecoderStep(b *testing.B) {
	tok, err := tokenizer.FromFile(filepath.Join("..", "..", "models", "demo", "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog, and then it naps in the sun. ", 40)
	ids, err := tok.Encode(text, false)
	if err != nil {
		b.Fatal(err)
	}
	prompt := ids[:16]
	for _, bc := range []struct {
		name string
		opts DecoderOptions
	}{
		{"no-stops", DecoderOptions{PromptIDs: prompt, SkipSpecialTokens: true, HiddenStopIDs: []uint32{511, 508}}},
		{"stops", DecoderOptions{PromptIDs: prompt, SkipSpecialTokens: true, HiddenStopIDs: []uint32{511, 508},
			Stop: []string{"\n\nUser:", "</answer>", "the sun. The end"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			outs := make([]*backend.Output, len(ids))
			for i, id := range ids {
				outs[i] = backend.Tokens(id)
			}
			b.ReportAllocs()
			d := NewDecoder(tok, bc.opts)
			k := 0
			for b.Loop() {
				if k == len(outs) {
					d, k = NewDecoder(tok, bc.opts), 0
				}
				if _, err := d.Step(outs[k]); err != nil {
					b.Fatal(err)
				}
				k++
			}
		})
	}
}
