package testgguf

import "unicode/utf8"

// byteOfRune inverts the GPT-2 byte-level alphabet (bytes_to_unicode):
// printable Latin-1 bytes stand for themselves, the other 68 bytes, in
// order, for U+0100 onwards. -1 marks runes outside the alphabet.
var byteOfRune = func() [0x144]int16 {
	var t [0x144]int16
	for i := range t {
		t[i] = -1
	}
	n := 0
	for b := range 256 {
		if '!' <= b && b <= '~' || 0xa1 <= b && b <= 0xac || 0xae <= b && b <= 0xff {
			t[b] = int16(b)
		} else {
			t[0x100+n] = int16(b)
			n++
		}
	}
	return t
}()

// validByteLevel reports whether a byte-level token's bytes are valid
// UTF-8 by themselves (not, say, the first two bytes of a CJK character).
func validByteLevel(tok string) bool {
	var buf [64]byte
	b := buf[:0]
	for _, r := range tok {
		if r < 0 || int(r) >= len(byteOfRune) || byteOfRune[r] < 0 {
			return false
		}
		b = append(b, byte(byteOfRune[r]))
	}
	return utf8.Valid(b)
}

// suppressed lists the tokens llama.cpp should never sample
// (tokenizer.ggml.suppress_tokens, a -inf logit bias in every sampler
// chain): unused ids, and vocabulary tokens that are not valid UTF-8 by
// themselves. A random model emits those in incoherent orders, and
// llama-server answers a completion whose text is not valid UTF-8 with
// HTTP 500 ("does not match the expected Content-only format").
func (v *vocab) suppressed() []int32 {
	var out []int32
	for id, tok := range v.tokens {
		switch v.types[id] {
		case tokenUnused:
			out = append(out, int32(id))
		case tokenNormal:
			if !validByteLevel(tok) {
				out = append(out, int32(id))
			}
		}
	}
	return out
}
