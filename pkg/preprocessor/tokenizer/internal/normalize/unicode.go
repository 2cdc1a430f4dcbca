package normalize

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/bytelevel"
)

// NFC applies Unicode canonical composition.
type NFC struct{}

// Normalize implements Normalizer.
func (NFC) Normalize(s string) string { return norm.NFC.String(s) }

// NFD applies Unicode canonical decomposition.
type NFD struct{}

// Normalize implements Normalizer.
func (NFD) Normalize(s string) string { return norm.NFD.String(s) }

// NFKC applies Unicode compatibility composition.
type NFKC struct{}

// Normalize implements Normalizer.
func (NFKC) Normalize(s string) string { return norm.NFKC.String(s) }

// NFKD applies Unicode compatibility decomposition.
type NFKD struct{}

// Normalize implements Normalizer.
func (NFKD) Normalize(s string) string { return norm.NFKD.String(s) }

// Lowercase maps every rune to its lowercase form as Rust's
// char::to_lowercase does (context free; U+0130 becomes "i\u0307";
// Unicode 16 case pairs from hfLower).
type Lowercase struct{}

// Normalize implements Normalizer.
func (Lowercase) Normalize(s string) string { return lowercase(s) }

func lowercase(s string) string {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		switch {
		case r < utf8.RuneSelf:
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
		case r == 0x130: // LATIN CAPITAL LETTER I WITH DOT ABOVE (SpecialCasing)
			b.WriteString("i\u0307")
		case r >= hfLowerMin && hfLower[r] != 0: // Unicode 16 case pairs
			b.WriteRune(hfLower[r])
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// Strip removes leading (Left) and/or trailing (Right) white space
// (Unicode White_Space, as Rust's char::is_whitespace).
type Strip struct {
	Left, Right bool
}

// Normalize implements Normalizer.
func (n Strip) Normalize(s string) string {
	if n.Left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.Right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

func stripFromJSON(raw []byte) (Normalizer, error) {
	cfg := struct {
		Left  *bool `json:"strip_left"`
		Right *bool `json:"strip_right"`
	}{}
	if err := unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	return Strip{Left: cfg.Left == nil || *cfg.Left, Right: cfg.Right == nil || *cfg.Right}, nil
}

// StripAccents removes every combining mark (General_Category M: Mn, Mc,
// Me), as HF's StripAccents does. It does not decompose first: combine it
// with NFD/NFKD to strip accents from precomposed letters.
type StripAccents struct{}

// Normalize implements Normalizer.
func (StripAccents) Normalize(s string) string { return filterMap(s, isMark, nil) }

// isMark is HF's (older) combining-mark table: Go's M patched by
// hfMarkAdd/hfMarkDel.
func isMark(r rune) bool {
	if r < 0x300 {
		return false
	}
	if unicode.Is(unicode.M, r) {
		return r < hfMarkDelMin || !unicode.Is(hfMarkDel, r)
	}
	return r >= hfMarkAddMin && unicode.Is(hfMarkAdd, r)
}

// Nmt removes ASCII control characters and maps other space-like
// characters to ' ', as SentencePiece's nmt normalization (HF "Nmt").
type Nmt struct{}

// Normalize implements Normalizer.
func (Nmt) Normalize(s string) string { return filterMap(s, nmtRemove, nmtMap) }

func nmtRemove(r rune) bool {
	return (r >= 0x01 && r <= 0x08) || r == 0x0B || (r >= 0x0E && r <= 0x1F) ||
		r == 0x7F || r == 0x8F || r == 0x9F
}

func nmtMap(r rune) rune {
	switch {
	case r == 0x09, r == 0x0A, r == 0x0C, r == 0x0D, r == 0x1680,
		r >= 0x200B && r <= 0x200F, r == 0x2028, r == 0x2029, r == 0x2581,
		r == 0xFEFF, r == 0xFFFD:
		return ' '
	}
	return r
}

// ByteLevel maps every byte of the text to the GPT-2 byte-level alphabet
// (the normalizer form of ByteLevel; no prefix space, no splitting).
type ByteLevel struct{}

// Normalize implements Normalizer.
func (ByteLevel) Normalize(s string) string { return bytelevel.Encode(s) }

// filterMap drops the runes for which remove is true and maps the others
// with mapf (nil: identity). The input is returned unchanged when nothing
// changes. Invalid UTF-8 bytes are treated as U+FFFD.
func filterMap(s string, remove func(rune) bool, mapf func(rune) rune) string {
	var b []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		drop := remove != nil && remove(r)
		m := r
		if !drop && mapf != nil {
			m = mapf(r)
		}
		if b == nil && (drop || m != r) {
			b = make([]byte, 0, len(s))
			b = append(b, s[:i]...)
		}
		if b != nil && !drop {
			if m == r {
				b = append(b, s[i:i+size]...)
			} else {
				b = utf8.AppendRune(b, m)
			}
		}
		i += size
	}
	if b == nil {
		return s
	}
	return string(b)
}
