package normalize

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Bert is HF's BertNormalizer. Steps, in order: CleanText (drop NUL,
// U+FFFD and control characters, map white space to ' '),
// HandleChineseChars (surround CJK ideographs with spaces), StripAccents
// (NFD then drop Mn), Lowercase.
type Bert struct {
	CleanText          bool
	HandleChineseChars bool
	StripAccents       bool
	Lowercase          bool
}

func bertFromJSON(raw []byte) (Normalizer, error) {
	cfg := struct {
		CleanText          *bool `json:"clean_text"`
		HandleChineseChars *bool `json:"handle_chinese_chars"`
		StripAccents       *bool `json:"strip_accents"`
		Lowercase          *bool `json:"lowercase"`
	}{}
	if err := unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	or := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	b := Bert{
		CleanText:          or(cfg.CleanText, true),
		HandleChineseChars: or(cfg.HandleChineseChars, true),
		Lowercase:          or(cfg.Lowercase, true),
	}
	b.StripAccents = or(cfg.StripAccents, b.Lowercase) // null follows lowercase
	return b, nil
}

// Normalize implements Normalizer.
func (n Bert) Normalize(s string) string {
	if n.CleanText {
		s = filterMap(s, bertRemove, bertSpace)
	}
	if n.HandleChineseChars {
		s = spaceChinese(s)
	}
	if n.StripAccents {
		s = filterMap(norm.NFD.String(s), isNonspacingMark, nil)
	}
	if n.Lowercase {
		s = lowercase(s)
	}
	return s
}

// isNonspacingMark is Mn as of HF's (older) unicode_categories crate: Go's
// Mn patched by hfMnAdd/hfMnDel.
func isNonspacingMark(r rune) bool {
	if r < 0x300 {
		return false
	}
	if unicode.Is(unicode.Mn, r) {
		return r < hfMnDelMin || !unicode.Is(hfMnDel, r)
	}
	return r >= hfMnAddMin && unicode.Is(hfMnAdd, r)
}

// bertRemove: NUL, U+FFFD and "control" (Cc, Cf, Co, Cs; not \t \n \r)
// as of HF's (older) unicode_categories crate: Go's tables minus
// hfControlDel.
func bertRemove(r rune) bool {
	switch r {
	case 0, 0xFFFD:
		return true
	case '\t', '\n', '\r':
		return false
	}
	if r < 0x20 || r == 0x7F || (r >= 0x80 && r < 0xA0) {
		return true
	}
	if r < 0xA0 {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) &&
		(r < hfControlDelMin || !unicode.Is(hfControlDel, r))
}

func bertSpace(r rune) rune {
	if r == '\t' || r == '\n' || r == '\r' || isSpace(r) {
		return ' '
	}
	return r
}

// isChineseChar uses the exact ranges of HF's bert.rs (note 0x2B920, not
// 0x2B820, as upstream).
func isChineseChar(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

func spaceChinese(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			if b != nil {
				b = append(b, s[i])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isChineseChar(r) {
			if b == nil {
				b = make([]byte, 0, len(s)+16)
				b = append(b, s[:i]...)
			}
			b = append(b, ' ')
			b = append(b, s[i:i+size]...)
			b = append(b, ' ')
		} else if b != nil {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	if b == nil {
		return s
	}
	return string(b)
}
