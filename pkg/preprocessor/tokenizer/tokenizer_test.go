package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// build returns a tokenizer.json with a BPE model over vocab (ids in order),
// no normalizer and no pre-tokenizer, plus the given sections.
func build(t *testing.T, vocab []string, merges []string, added []AddedToken, extra map[string]string) *Tokenizer {
	t.Helper()
	v := map[string]int{}
	for i, s := range vocab {
		v[s] = i
	}
	m := map[string]any{"type": "BPE", "vocab": v, "merges": merges, "unk_token": nil, "byte_fallback": true}
	doc := map[string]json.RawMessage{}
	raw, _ := json.Marshal(m)
	doc["model"] = raw
	if added == nil {
		added = []AddedToken{}
	}
	raw, _ = json.Marshal(added)
	doc["added_tokens"] = raw
	for k, s := range extra {
		doc[k] = json.RawMessage(s)
	}
	b, _ := json.Marshal(doc)
	tok, err := FromBytes(b)
	if err != nil {
		t.Fatalf("FromBytes: %v", err)
	}
	return tok
}

func mustEncode(t *testing.T, tok *Tokenizer, s string, add bool) []uint32 {
	t.Helper()
	ids, err := tok.Encode(s, add)
	if err != nil {
		t.Fatalf("Encode(%q): %v", s, err)
	}
	return ids
}

var letters = []string{"a", "b", " ", "ab", "<0x21>"} // ids 0..4

func TestAddedTokensAndPostProcessor(t *testing.T) {
	added := []AddedToken{
		{ID: 5, Content: "<s>", Special: true},
		{ID: 6, Content: "</s>", Special: true},
		{ID: 7, Content: "<mask>", Special: true, LStrip: true},
		{ID: 8, Content: "[R]", RStrip: true},
		{ID: 9, Content: "ba", SingleWord: true},
		{ID: 10, Content: "<s>x"}, // longer match wins at the same start
	}
	post := `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[5],"tokens":["<s>"]},"</s>":{"id":"</s>","ids":[6],"tokens":["</s>"]}}}`
	tok := build(t, letters, []string{"a b"}, added, map[string]string{"post_processor": post})
	cases := []struct {
		in   string
		add  bool
		want []uint32
	}{
		{"ab", true, []uint32{5, 3, 6}},
		{"ab", false, []uint32{3}},
		{"a</s>b", false, []uint32{0, 6, 1}}, // special recognised without addSpecialTokens
		{"<s>xa", false, []uint32{10, 0}},
		{"a  <mask>b", false, []uint32{0, 7, 1}}, // lstrip swallows spaces
		{"[R]  a", false, []uint32{8, 0}},        // rstrip swallows spaces
		{"ba b", false, []uint32{9, 2, 1}},       // single word matches
		{"aba", false, []uint32{3, 0}},           // inside a word: no match
		{"a!", false, []uint32{0, 4}},            // byte fallback
	}
	for _, c := range cases {
		if got := mustEncode(t, tok, c.in, c.add); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %v) = %v want %v", c.in, c.add, got, c.want)
		}
	}
	if got, _ := tok.Decode([]uint32{5, 3, 6, 8}, true); got != "ab [R]" { // no decoder: joined by spaces
		t.Errorf("Decode skip = %q", got)
	}
	if got, _ := tok.Decode([]uint32{5, 3, 999}, false); got != "<s> ab" { // no decoder: joined by spaces
		t.Errorf("Decode = %q", got)
	}
	if !tok.IsSpecial(5) || tok.IsSpecial(8) || tok.IsSpecial(0) {
		t.Error("IsSpecial wrong")
	}
	if got := tok.SpecialTokens(); !slices.Equal(got, []uint32{5, 6, 7}) {
		t.Errorf("SpecialTokens = %v", got)
	}
	if id, ok := tok.TokenToID("<mask>"); !ok || id != 7 {
		t.Errorf("TokenToID = %v %v", id, ok)
	}
	if s, ok := tok.IDToToken(3); !ok || s != "ab" {
		t.Errorf("IDToToken = %q %v", s, ok)
	}
	if tok.VocabSize() != 11 {
		t.Errorf("VocabSize = %d", tok.VocabSize())
	}
}

func TestAddedTokenIDsAssignedLikeRust(t *testing.T) {
	// The file claims ids 100 and 3, but the Rust library assigns the next
	// free id after the model vocabulary, and keeps the model id of a token
	// already in the vocabulary.
	tok := build(t, letters, nil, []AddedToken{{ID: 100, Content: "<x>"}, {ID: 3, Content: "a"}}, nil)
	if id, _ := tok.TokenToID("<x>"); id != 5 {
		t.Fatalf("<x> id = %d", id)
	}
	if id, _ := tok.TokenToID("a"); id != 0 {
		t.Fatalf("a id = %d", id)
	}
}

func TestProcessors(t *testing.T) {
	for _, c := range []struct {
		post string
		want []uint32
	}{
		{`{"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",0],"trim_offsets":true,"add_prefix_space":false}`, []uint32{0, 3, 2}},
		{`{"type":"BertProcessing","sep":["[SEP]",1],"cls":["[CLS]",4]}`, []uint32{4, 3, 1}},
		{`{"type":"ByteLevel","add_prefix_space":true}`, []uint32{3}},
		{`{"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"TemplateProcessing","single":"<s> $A","pair":"","special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}}]}`, []uint32{1, 3}},
	} {
		tok := build(t, letters, []string{"a b"}, nil, map[string]string{"post_processor": c.post})
		if got := mustEncode(t, tok, "ab", true); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v want %v", c.post, got, c.want)
		}
	}
}

func TestConfigRebuildsLlamaPostProcessor(t *testing.T) {
	v := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2, "a": 3}
	doc := fmt.Sprintf(`{"added_tokens":[{"id":1,"content":"<s>","special":true},{"id":2,"content":"</s>","special":true}],
	"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},
	"model":{"type":"BPE","vocab":%s,"merges":[]}}`, mustJSON(v))
	cases := []struct {
		cfg  string
		want []uint32
	}{
		{``, []uint32{1, 3}},
		{`{"tokenizer_class":"LlamaTokenizer","add_bos_token":true,"add_eos_token":true,"bos_token":"<s>","eos_token":{"content":"</s>"}}`, []uint32{1, 3, 2}},
		{`{"tokenizer_class":"LlamaTokenizerFast","add_bos_token":false,"bos_token":"<s>"}`, []uint32{3}},
		{`{"tokenizer_class":"GemmaTokenizer","bos_token":"<s>"}`, []uint32{1, 3}},
		{`{"tokenizer_class":"Qwen2Tokenizer","add_bos_token":false,"add_eos_token":true,"eos_token":"</s>"}`, []uint32{1, 3}},
	}
	for _, c := range cases {
		var opts []Option
		if c.cfg != "" {
			opts = append(opts, WithConfig([]byte(c.cfg)))
		}
		tok, err := FromBytes([]byte(doc), opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.cfg, err)
		}
		if got := mustEncode(t, tok, "a", true); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v want %v", c.cfg, got, c.want)
		}
	}
	if _, err := FromBytes([]byte(doc), WithConfig([]byte(`{"tokenizer_class":"LlamaTokenizer","add_eos_token":true,"bos_token":"<s>"}`))); err == nil || !strings.HasPrefix(err.Error(), "tokenizer: ") {
		t.Errorf("missing eos_token: err = %v", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestLoadErrors(t *testing.T) {
	for _, s := range []string{``, `{`, `{"model":{"type":"Nope","vocab":{}}}`, `{"added_tokens":[]}`, `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a b"]}}`} {
		if _, err := FromBytes([]byte(s)); err == nil || !strings.HasPrefix(err.Error(), "tokenizer: ") {
			t.Errorf("FromBytes(%q): err = %v", s, err)
		}
	}
	if _, err := FromFile("/nonexistent/tokenizer.json"); err == nil {
		t.Error("FromFile: no error")
	}
}

// An added token that begins before a cut and, in the new text, matches
// across it (leftmost-longest) makes Resume refuse the cut; rstrip and
// single_word tokens make no cuts.
func TestResumeChecksTheCut(t *testing.T) {
	added := []AddedToken{
		{ID: 5, Content: "<s>"},
		{ID: 6, Content: "<s>ab"},
		{ID: 7, Content: "[R]", RStrip: true},
		{ID: 8, Content: "ba", SingleWord: true},
	}
	tok := build(t, letters, []string{"a b"}, added, nil)
	ids, cuts, err := tok.EncodeCuts("a<s>b")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cuts, []Cut{{Offset: 4, Tokens: 2}}) {
		t.Fatalf("cuts = %v", cuts)
	}
	if _, _, ok, _ := tok.Resume("a<s>ab", cuts[0], ids); ok {
		t.Error(`Resume took the cut after "<s>" in "a<s>ab", where "<s>ab" matches`)
	}
	got, _, ok, err := tok.Resume("a<s>ba", cuts[0], ids)
	if err != nil || !ok {
		t.Fatalf("Resume(a<s>ba) = %v %v", ok, err)
	}
	if want := mustEncode(t, tok, "a<s>ba", false); !slices.Equal(got, want) {
		t.Errorf("Resume(a<s>ba) = %v, encoded whole %v", got, want)
	}
	if _, cuts, _ := tok.EncodeCuts("a[R] b ba b"); len(cuts) != 0 {
		t.Errorf("rstrip and single_word tokens made cuts %v", cuts)
	}
}
