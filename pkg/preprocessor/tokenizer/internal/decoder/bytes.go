package decoder

import (
	"strings"
	"unicode/utf8"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/bytelevel"
)

// ByteLevel maps GPT-2 alphabet characters back to bytes. A token holding a
// character outside the alphabet (an added token such as "你好") contributes
// its raw UTF-8 bytes. The joined bytes are converted with Rust's
// String::from_utf8_lossy rules.
type ByteLevel struct{}

// DecodeChain implements Decoder.
func (ByteLevel) DecodeChain(tokens []string) []string {
	var out []byte
	for _, t := range tokens {
		out = AppendByteLevel(out, t)
	}
	return []string{Lossy(out)}
}

// AppendByteLevel appends the bytes token t stands for to out: one per
// character of the GPT-2 alphabet, or t's own UTF-8 bytes if it holds a
// character outside it.
func AppendByteLevel(out []byte, t string) []byte {
	start := len(out)
	for _, r := range t {
		b, isByte := bytelevel.ByteOf(r)
		if !isByte {
			return append(out[:start], t...)
		}
		out = append(out, b)
	}
	return out
}

// ByteFallback turns runs of "<0xNN>" tokens into the bytes they stand for;
// a run that is not valid UTF-8 becomes one U+FFFD per byte token.
type ByteFallback struct{}

func byteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	v := 0
	for _, c := range []byte(t[3:5]) {
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			if c == '+' && v == 0 && t[3] == '+' { // u8::from_str_radix accepts a sign
				continue
			}
			return 0, false
		}
		v = v*16 + d
	}
	return byte(v), true
}

// DecodeChain implements Decoder.
func (ByteFallback) DecodeChain(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range tokens {
		if b, ok := byteToken(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

// Lossy converts b to a string like Rust's String::from_utf8_lossy: each
// maximal invalid subpart becomes one U+FFFD.
func Lossy(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			sb.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		// Invalid: consume the lead byte plus the continuation bytes that
		// still form a valid prefix (Unicode "maximal subpart").
		n := 1
		var need int
		lo, hi := byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
			need = 2
		case c == 0xED:
			need, hi = 2, 0x9F
		case c == 0xF0:
			need, lo = 3, 0x90
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		case c == 0xF4:
			need, hi = 3, 0x8F
		}
		for k := 0; k < need && i+n < len(b); k++ {
			d := b[i+n]
			if k == 0 {
				if d < lo || d > hi {
					break
				}
			} else if d < 0x80 || d > 0xBF {
				break
			}
			n++
		}
		sb.WriteString("\uFFFD")
		i += n
	}
	return sb.String()
}
