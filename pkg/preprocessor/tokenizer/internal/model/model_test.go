package model

import (
	"errors"
	"slices"
	"testing"
)

func vocabOf(toks ...string) map[string]uint32 {
	v := map[string]uint32{}
	for i, t := range toks {
		v[t] = uint32(i)
	}
	return v
}

func mustTok(t *testing.T, m Model, word string) []uint32 {
	t.Helper()
	ids, err := m.Tokenize(nil, word)
	if err != nil {
		t.Fatalf("Tokenize(%q): %v", word, err)
	}
	return ids
}

func TestBPELeftmostAmongEqualRanks(t *testing.T) {
	m, err := NewBPE(vocabOf("a", "aa"), [][2]string{{"a", "a"}}, BPEConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// "aaa": the pair (a,a) occurs at 0 and 1 with the same rank; the
	// leftmost merges first.
	if got, want := mustTok(t, m, "aaa"), []uint32{1, 0}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got, want := mustTok(t, m, "aaaaa"), []uint32{1, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestBPERankOrder(t *testing.T) {
	// vocab: a b c ab bc abc ; merges: (b,c) first then (a,b) then (a,bc)
	m, err := NewBPE(vocabOf("a", "b", "c", "ab", "bc", "abc"),
		[][2]string{{"b", "c"}, {"a", "b"}, {"a", "bc"}}, BPEConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustTok(t, m, "abc"), []uint32{5}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got, want := mustTok(t, m, "abab"), []uint32{3, 3}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	// second call hits the cache
	if got, want := mustTok(t, m, "abab"), []uint32{3, 3}; !slices.Equal(got, want) {
		t.Fatalf("cached: got %v want %v", got, want)
	}
}

func TestBPEByteFallbackAndUnk(t *testing.T) {
	v := vocabOf("<unk>", "a", "<0xC3>", "<0xA9>")
	m, err := NewBPE(v, nil, BPEConfig{UnkToken: "<unk>", HasUnk: true, FuseUnk: true, ByteFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustTok(t, m, "aé"), []uint32{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("byte fallback: got %v want %v", got, want)
	}
	// 'x' has no byte token: unk, and consecutive unknowns fuse.
	if got, want := mustTok(t, m, "xxa"), []uint32{0, 1}; !slices.Equal(got, want) {
		t.Fatalf("fused unk: got %v want %v", got, want)
	}
	m2, _ := NewBPE(v, nil, BPEConfig{UnkToken: "<unk>", HasUnk: true})
	if got, want := mustTok(t, m2, "xxa"), []uint32{0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("unfused unk: got %v want %v", got, want)
	}
	m3, _ := NewBPE(v, nil, BPEConfig{})
	if got, want := mustTok(t, m3, "xa"), []uint32{1}; !slices.Equal(got, want) {
		t.Fatalf("no unk drops: got %v want %v", got, want)
	}
	m4, _ := NewBPE(v, nil, BPEConfig{UnkToken: "<missing>", HasUnk: true})
	if _, err := m4.Tokenize(nil, "x"); !errors.Is(err, ErrMissingUnk) {
		t.Fatalf("want ErrMissingUnk, got %v", err)
	}
}

func TestBPEIgnoreMerges(t *testing.T) {
	// "abc" is in the vocabulary but not reachable by merges.
	v := vocabOf("a", "b", "c", "ab", "abc")
	merges := [][2]string{{"a", "b"}}
	m, _ := NewBPE(v, merges, BPEConfig{})
	if got, want := mustTok(t, m, "abc"), []uint32{3, 2}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	m, _ = NewBPE(v, merges, BPEConfig{IgnoreMerges: true})
	if got, want := mustTok(t, m, "abc"), []uint32{4}; !slices.Equal(got, want) {
		t.Fatalf("ignore_merges: got %v want %v", got, want)
	}
}

func TestBPEPrefixSuffix(t *testing.T) {
	// CLIP style end_of_word_suffix.
	v := vocabOf("a", "b", "b</w>", "ab</w>")
	m, err := NewBPE(v, [][2]string{{"a", "b</w>"}}, BPEConfig{EndOfWordSuffix: "</w>"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustTok(t, m, "ab"), []uint32{3}; !slices.Equal(got, want) {
		t.Fatalf("suffix: got %v want %v", got, want)
	}
	if got, want := mustTok(t, m, "ba"), []uint32{1}; !slices.Equal(got, want) {
		t.Fatalf("suffix unknown last char dropped: got %v want %v", got, want)
	}
	// continuing_subword_prefix: merge "a ##b" -> "ab".
	v = vocabOf("a", "##b", "ab")
	m, err = NewBPE(v, [][2]string{{"a", "##b"}}, BPEConfig{ContinuingSubwordPrefix: "##"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustTok(t, m, "ab"), []uint32{2}; !slices.Equal(got, want) {
		t.Fatalf("prefix: got %v want %v", got, want)
	}
}

func TestBPELongWord(t *testing.T) {
	v := vocabOf("a", "aa", "aaaa")
	m, _ := NewBPE(v, [][2]string{{"a", "a"}, {"aa", "aa"}}, BPEConfig{})
	word := make([]byte, 100001)
	for i := range word {
		word[i] = 'a'
	}
	ids := mustTok(t, m, string(word))
	if len(ids) != 25001 || ids[len(ids)-1] != 0 || ids[0] != 2 {
		t.Fatalf("long word: %d ids, last %d", len(ids), ids[len(ids)-1])
	}
}

func TestFromJSONBPEFormats(t *testing.T) {
	for _, js := range []string{
		`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}`,
		`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]}`,
		`{"vocab":{"a":0,"b":1,"ab":2},"merges":["#version: 0.2","a b"],"dropout":null}`,
	} {
		m, err := FromJSON([]byte(js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		if _, ok := m.(*BPE); !ok {
			t.Fatalf("%s: got %T", js, m)
		}
		if got := mustTok(t, m, "ab"); !slices.Equal(got, []uint32{2}) {
			t.Fatalf("%s: got %v", js, got)
		}
	}
	if _, err := FromJSON([]byte(`{"type":"BPE","vocab":{"a":0},"merges":["a b c"]}`)); err == nil {
		t.Fatal("merge with a space accepted")
	}
	if _, err := FromJSON([]byte(`{"type":"BPE","vocab":{"a":0},"merges":["a z"]}`)); err == nil {
		t.Fatal("merge out of vocabulary accepted")
	}
}

func TestFromJSONInference(t *testing.T) {
	cases := map[string]string{
		`{"unk_id":0,"vocab":[["<unk>",0],["a",-1.5]]}`:                                                             "*model.Unigram",
		`{"unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,"vocab":{"[UNK]":0}}`: "*model.WordPiece",
		`{"unk_token":"<unk>","vocab":{"<unk>":0}}`:                                                                 "*model.WordLevel",
	}
	for js, want := range cases {
		m, err := FromJSON([]byte(js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		if got := typeName(m); got != want {
			t.Fatalf("%s: got %s want %s", js, got, want)
		}
	}
}

func typeName(m Model) string {
	switch m.(type) {
	case *BPE:
		return "*model.BPE"
	case *Unigram:
		return "*model.Unigram"
	case *WordPiece:
		return "*model.WordPiece"
	case *WordLevel:
		return "*model.WordLevel"
	}
	return "?"
}

func TestUnigramViterbi(t *testing.T) {
	pieces := []string{"<unk>", "a", "b", "ab", "abc", "c", "bc"}
	scores := []float64{0, -1, -1, -1.5, -5, -1, -0.5}
	m, err := NewUnigram(pieces, scores, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	// abc: "abc"=-5, "ab"+"c"=-2.5, "a"+"bc"=-1.5, "a"+"b"+"c"=-3 -> a bc
	if got, want := mustTok(t, m, "abc"), []uint32{1, 6}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	// unknown characters are fused into one <unk>
	if got, want := mustTok(t, m, "xyab"), []uint32{0, 3}; !slices.Equal(got, want) {
		t.Fatalf("fused unk: got %v want %v", got, want)
	}
	if got, want := mustTok(t, m, "axy"), []uint32{1, 0}; !slices.Equal(got, want) {
		t.Fatalf("trailing unk: got %v want %v", got, want)
	}
}

// TestUnigramTies pins how the Viterbi search breaks ties, against ids
// from HF tokenizers 0.23.2 for the same model. On equal path scores the
// path found first (the earlier start) is kept. Which paths tie depends on
// the exact bits of the scores: Rust reads "-9.366598129272461" one unit in
// the last place above the correctly rounded value, so from "aaaaa" on the
// single "a" moves to the end.
func TestUnigramTies(t *testing.T) {
	m, err := FromJSON([]byte(`{"type":"Unigram","unk_id":0,"vocab":[` +
		`["<unk>",0.0],["a",-10.307073593139648],["aa",-9.366598129272461]]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		word string
		want []uint32
	}{
		{"aaa", []uint32{1, 2}},
		{"aaaa", []uint32{2, 2}},
		{"aaaaa", []uint32{2, 2, 1}},
		{"aaaaaaa", []uint32{2, 2, 1, 2}},
		{"aaaaaaaaa", []uint32{2, 2, 1, 2, 2}},
	} {
		if got := mustTok(t, m, tc.word); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q) = %v, want %v", tc.word, got, tc.want)
		}
	}
}

func TestUnigramByteFallback(t *testing.T) {
	pieces := []string{"<unk>", "a", "<0xC3>", "<0xA9>"}
	m, err := NewUnigram(pieces, []float64{0, -1, 0, 0}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustTok(t, m, "aé"), []uint32{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got, want := mustTok(t, m, "ax"), []uint32{1, 0}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestWordPiece(t *testing.T) {
	m := NewWordPiece(vocabOf("[UNK]", "un", "##aff", "##able", "a"), "[UNK]", "##", 10)
	if got, want := mustTok(t, m, "unaffable"), []uint32{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got, want := mustTok(t, m, "unx"), []uint32{0}; !slices.Equal(got, want) {
		t.Fatalf("no match: got %v want %v", got, want)
	}
	if got, want := mustTok(t, m, "aaaaaaaaaaa"), []uint32{0}; !slices.Equal(got, want) {
		t.Fatalf("too long: got %v want %v", got, want)
	}
}

func TestWordLevel(t *testing.T) {
	m := NewWordLevel(vocabOf("<unk>", "hello"), "<unk>")
	if got := mustTok(t, m, "hello"); !slices.Equal(got, []uint32{1}) {
		t.Fatal(got)
	}
	if got := mustTok(t, m, "bye"); !slices.Equal(got, []uint32{0}) {
		t.Fatal(got)
	}
}
