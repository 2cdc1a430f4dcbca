package bytelevel

import (
	"bytes"
	"testing"
)

func TestAlphabet(t *testing.T) {
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ {
		r := Rune(byte(b))
		if seen[r] {
			t.Fatalf("rune %U used twice", r)
		}
		seen[r] = true
		if got, ok := ByteOf(r); !ok || got != byte(b) {
			t.Fatalf("ByteOf(%U) = %d,%v want %d", r, got, ok, b)
		}
	}
	// Known GPT-2 values.
	for b, want := range map[byte]rune{' ': 'Ġ', '\n': 'Ċ', '\t': 'ĉ', 0: 'Ā', 'a': 'a', 0xAD: 'Ń', 0x7F: 'ġ', 0xFF: 'ÿ'} {
		if got := Rune(b); got != want {
			t.Errorf("Rune(%#x) = %q want %q", b, got, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	var all []byte
	for b := 0; b < 256; b++ {
		all = append(all, byte(b))
	}
	for _, s := range []string{"", "Hello world", "héllo 你好 🤗\r\n\t", string(all)} {
		e := Encode(s)
		if len(e) != EncodedLen(s) {
			t.Errorf("EncodedLen(%q) = %d, len(Encode) = %d", s, EncodedLen(s), len(e))
		}
		if got := Decode(e); !bytes.Equal(got, []byte(s)) {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
		if got := DecodeToken(e); !bytes.Equal(got, []byte(s)) {
			t.Errorf("DecodeToken(Encode(%q)) = %q", s, got)
		}
	}
	if got := Encode(" hello"); got != "Ġhello" {
		t.Errorf("Encode = %q", got)
	}
}

func TestDecodeOutsideAlphabet(t *testing.T) {
	// Per rune: "Ġ" -> ' ', "你" kept, ' ' kept.
	if got := string(Decode("Ġa你 b")); got != " a你 b" {
		t.Errorf("Decode = %q", got)
	}
	// Per token (HF decoder): any foreign rune keeps the token whole.
	if got := string(DecodeToken("Ġa你")); got != "Ġa你" {
		t.Errorf("DecodeToken = %q", got)
	}
}

func BenchmarkEncode(b *testing.B) {
	s := string(bytes.Repeat([]byte("Hello, world! Ünïcödé 你好 "), 1000))
	b.SetBytes(int64(len(s)))
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < b.N; i++ {
		buf = AppendEncode(buf[:0], s)
	}
}
