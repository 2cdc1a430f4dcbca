// Package bytelevel holds the GPT-2 byte-to-unicode alphabet used by the
// ByteLevel pre-tokenizer, normalizer and decoder of Hugging Face tokenizers:
// every byte 0..255 is mapped to one printable rune (U+0021..U+0143).
package bytelevel

import "unicode/utf8"

// byteRune[b] is the rune byte b maps to.
var byteRune [256]rune

// byteStr[b] is the UTF-8 encoding of byteRune[b].
var byteStr [256]string

// runeByte[r] is 1+b for the rune r that byte b maps to, 0 when r is not in
// the alphabet. All alphabet runes are below maxRune.
var runeByte [maxRune]uint16

const maxRune = 0x144

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = rune(256 + n)
			n++
		}
		byteStr[b] = string(byteRune[b])
		runeByte[byteRune[b]] = uint16(b) + 1
	}
}

// Rune returns the alphabet rune of byte b.
func Rune(b byte) rune { return byteRune[b] }

// Alphabet returns the 256 alphabet runes as one-rune strings, in byte order.
func Alphabet() []string {
	out := make([]string, 256)
	copy(out, byteStr[:])
	return out
}

// Encode maps every byte of s to its alphabet rune.
func Encode(s string) string {
	return string(AppendEncode(make([]byte, 0, EncodedLen(s)), s))
}

// EncodedLen is len(Encode(s)) (ASCII printable bytes take one byte, every
// other byte two).
func EncodedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if len(byteStr[s[i]]) == 2 {
			n++
		}
	}
	return n
}

// AppendEncode appends Encode(s) to dst.
func AppendEncode(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= '!' && b <= '~' {
			dst = append(dst, b)
			continue
		}
		dst = append(dst, byteStr[b]...)
	}
	return dst
}

// ByteOf returns the byte an alphabet rune stands for; ok is false when r is
// not in the alphabet.
func ByteOf(r rune) (b byte, ok bool) {
	if r < 0 || r >= maxRune || runeByte[r] == 0 {
		return 0, false
	}
	return byte(runeByte[r] - 1), true
}

// Decode is the per-rune inverse of Encode: alphabet runes become their
// byte, any other rune is kept as its UTF-8 encoding.
//
// Hugging Face's ByteLevel decoder works per token instead: a token holding
// any rune outside the alphabet is kept whole as UTF-8 (see DecodeToken).
func Decode(s string) []byte {
	return AppendDecode(make([]byte, 0, len(s)), s)
}

// AppendDecode appends Decode(s) to dst.
func AppendDecode(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			// In the alphabet ASCII maps to itself; other ASCII is kept.
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if b, ok := ByteOf(r); ok && r != utf8.RuneError {
			dst = append(dst, b)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// DecodeToken decodes one token exactly as Hugging Face's ByteLevel decoder
// does: when every rune of tok is in the alphabet the bytes are returned,
// otherwise tok's own UTF-8 bytes are returned unchanged.
func DecodeToken(tok string) []byte {
	return AppendDecodeToken(make([]byte, 0, len(tok)), tok)
}

// AppendDecodeToken appends DecodeToken(tok) to dst.
func AppendDecodeToken(dst []byte, tok string) []byte {
	n := len(dst)
	for i := 0; i < len(tok); {
		r, size := utf8.DecodeRuneInString(tok[i:])
		b, ok := ByteOf(r)
		if !ok || (r == utf8.RuneError && size == 1) {
			return append(dst[:n], tok...)
		}
		dst = append(dst, b)
		i += size
	}
	return dst
}
