package decoder

import (
	"encoding/json"
	"slices"
	"testing"
)

func decodeJSON(t *testing.T, js string, tokens ...string) string {
	t.Helper()
	d, err := FromJSON(json.RawMessage(js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return Decode(d, tokens)
}

func TestDecoders(t *testing.T) {
	llama := `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}`
	cases := []struct {
		js     string
		tokens []string
		want   string
	}{
		{`{"type":"ByteLevel"}`, []string{"Hello", "Ġworld", "ĠðŁĺ", "Ģ"}, "Hello world 😀"},
		{`{"type":"ByteLevel"}`, []string{"ĠðŁĺ"}, " \uFFFD"},                    // truncated 4-byte sequence: one U+FFFD
		{`{"type":"ByteLevel"}`, []string{"<|im_start|>", "你"}, "<|im_start|>你"}, // non-alphabet chars: raw bytes
		{llama, []string{"▁Hello", "▁", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"}, "Hello 😀"},
		{llama, []string{"▁a", "<0xF0>", "<0x9F>"}, "a\uFFFD\uFFFD"},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`, []string{"▁Hey", "▁▁you"}, "Hey  you"},
		{`{"type":"Metaspace","replacement":"▁","add_prefix_space":true,"str_rep":"▁"}`, []string{"▁▁Hey", "▁you"}, "Hey you"},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"never"}`, []string{"▁Hey"}, " Hey"},
		{`{"type":"WordPiece","prefix":"##","cleanup":true}`, []string{"hello", "##s", "world", "."}, "hellos world."},
		{`{"type":"WordPiece","prefix":"##","cleanup":false}`, []string{"a", "."}, "a ."},
		{`{"type":"BPEDecoder","suffix":"</w>"}`, []string{"hel", "lo</w>", "world</w>"}, "hello world"},
		{`{"type":"CTC","pad_token":"<pad>","word_delimiter_token":"|","cleanup":true}`, []string{"<pad>", "h", "h", "e", "<pad>", "l", "l", "|", "o"}, "hel o"},
		{`{"type":"Strip","content":"x","start":2,"stop":1}`, []string{"xxxax"}, "xa"},
		{`null`, []string{"a", "b"}, "a b"},
	}
	for _, c := range cases {
		if got := decodeJSON(t, c.js, c.tokens...); got != c.want {
			t.Errorf("%s %q: got %q want %q", c.js, c.tokens, got, c.want)
		}
	}
}

func TestLossy(t *testing.T) {
	cases := map[string]string{
		"a\xF0\x9F\x98":     "a\uFFFD",
		"\xE2\x82":          "\uFFFD",
		"\xFF\xFE":          "\uFFFD\uFFFD",
		"\xE0\x80":          "\uFFFD\uFFFD", // E0 80 is not a valid prefix
		"\xED\xA0\x80":      "\uFFFD\uFFFD\uFFFD",
		"ok\xC3\xA9\xC3":    "oké\uFFFD",
		"\xF4\x90\x80\x80":  "\uFFFD\uFFFD\uFFFD\uFFFD",
		"\xF0\x9F\x98\x80!": "😀!",
	}
	for in, want := range cases {
		if got := Lossy([]byte(in)); got != want {
			t.Errorf("Lossy(%q) = %q want %q", in, got, want)
		}
	}
}

// A Replace decoder's regex is Oniguruma syntax, lookaround included (the
// same engine as the Replace normalizer), not Go's RE2.
func TestReplaceDecoderRegexWithLookahead(t *testing.T) {
	d, err := FromJSON([]byte(`{"type":"Replace","pattern":{"Regex":"_(?=\\w)"},"content":" "}`))
	if err != nil {
		t.Fatalf("lookahead pattern refused: %v", err)
	}
	got := d.DecodeChain([]string{"_a", "b_", "_"})
	if want := []string{" a", "b_", "_"}; !slices.Equal(got, want) {
		t.Fatalf("DecodeChain = %q, want %q", got, want)
	}
}
