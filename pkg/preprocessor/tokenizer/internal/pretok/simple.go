package pretok

import (
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf8"
)

// whitespace is HF's Whitespace pre-tokenizer: the matches of
// `\w+|[^\w\s]+` (Rust regex crate Unicode classes), the rest removed.
type whitespace struct{}

func (whitespace) run(dst, splits []string, atStart bool) ([]string, bool) {
	sp := splitter{f: wordFinder{}, b: removed, invert: true}
	return sp.run(dst, splits, atStart)
}

// wordFinder matches `\w+|[^\w\s]+`.
type wordFinder struct{}

func (wordFinder) find(s string, i int) (int, int, bool) {
	for i < len(s) {
		r, size := decode(s, i)
		switch {
		case isWord(r):
			j := i + size
			for j < len(s) {
				r2, sz := decode(s, j)
				if !isWord(r2) {
					break
				}
				j += sz
			}
			return i, j, true
		case !isSpaceRune(r):
			j := i + size
			for j < len(s) {
				r2, sz := decode(s, j)
				if isWord(r2) || isSpaceRune(r2) {
					break
				}
				j += sz
			}
			return i, j, true
		}
		i += size
	}
	return 0, 0, false
}

// isWord is the Unicode \w of the Rust regex crate: Alphabetic, M, Nd, Pc,
// Join_Control (Unicode 16: Go's tables patched by hfWordAdd).
func isWord(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.In(r, unicode.Nl, unicode.Other_Alphabetic,
		unicode.M, unicode.Nd, unicode.Pc) || r == 0x200C || r == 0x200D ||
		r >= hfWordAddMin && unicode.Is(hfWordAdd, r)
}

func isSpaceRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r] == cSpace
	}
	return unicode.IsSpace(r)
}

// whitespaceSplit splits on white space (removed).
type whitespaceSplit struct{}

func (whitespaceSplit) run(dst, splits []string, atStart bool) ([]string, bool) {
	sp := splitter{f: runeFunc(isSpaceRune), b: removed}
	return sp.run(dst, splits, atStart)
}

// isBertPunc is HF's is_bert_punc: ASCII punctuation or Unicode P* as of
// the (older) unicode_categories crate HF uses: Go's P patched by
// hfPunctAdd/hfPunctDel.
func isBertPunc(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r < 0x7F && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}
	if unicode.IsPunct(r) {
		return r < hfPunctDelMin || !unicode.Is(hfPunctDel, r)
	}
	return r >= hfPunctAddMin && unicode.Is(hfPunctAdd, r)
}

// bertPre is HF's BertPreTokenizer: split on white space (removed), then
// isolate every punctuation rune.
type bertPre struct{}

func (bertPre) run(dst, splits []string, atStart bool) ([]string, bool) {
	ws := splitter{f: runeFunc(isSpaceRune), b: removed}
	var tmp []string
	tmp, atStart = ws.run(tmp, splits, atStart)
	p := splitter{f: runeFunc(isBertPunc), b: isolated}
	return p.run(dst, tmp, atStart)
}

func punctuationFromJSON(raw []byte) (stage, error) {
	var cfg struct {
		Behavior string `json:"behavior"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	b, err := parseBehavior(cfg.Behavior, isolated)
	if err != nil {
		return nil, err
	}
	return &splitter{f: runeFunc(isBertPunc), b: b}, nil
}

// digitsFromJSON: HF's Digits splits on char::is_numeric (Unicode 16 N),
// each digit isolated (individual_digits) or runs kept together.
func digitsFromJSON(raw []byte) (stage, error) {
	var cfg struct {
		Individual bool `json:"individual_digits"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	b := contiguous
	if cfg.Individual {
		b = isolated
	}
	return &splitter{f: runeFunc(isNumeric), b: b}, nil
}

func isNumeric(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r) || r >= hfNumericAddMin && unicode.Is(hfNumericAdd, r)
}

func charDelimiterFromJSON(raw []byte) (stage, error) {
	var cfg struct {
		Delimiter string `json:"delimiter"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(cfg.Delimiter) != 1 {
		return nil, errors.New("delimiter must be one character")
	}
	d, _ := utf8.DecodeRuneInString(cfg.Delimiter)
	return &splitter{f: runeFunc(func(r rune) bool { return r == d }), b: removed}, nil
}

// fixedLength cuts every split into chunks of n runes.
type fixedLength struct{ n int }

func fixedLengthFromJSON(raw []byte) (stage, error) {
	cfg := struct {
		Length *int `json:"length"`
	}{}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	n := 5
	if cfg.Length != nil {
		n = *cfg.Length
	}
	if n <= 0 {
		return nil, errors.New("length must be positive")
	}
	return fixedLength{n}, nil
}

func (f fixedLength) run(dst, splits []string, atStart bool) ([]string, bool) {
	first := false
	for i, s := range splits {
		if i == 0 {
			first = atStart && s != ""
		}
		start, count := 0, 0
		for j := range s {
			if count == f.n {
				dst = append(dst, s[start:j])
				start, count = j, 0
			}
			count++
		}
		if start < len(s) {
			dst = append(dst, s[start:])
		}
	}
	return dst, first
}

// unicodeScripts splits where the Unicode script changes (HF
// UnicodeScripts: Hiragana, Katakana and U+30FC count as Han; ' ' has no
// script and joins the piece before it; text before the first non-space
// rune is dropped, as upstream).
type unicodeScripts struct{}

func (unicodeScripts) run(dst, splits []string, atStart bool) ([]string, bool) {
	first := false
	for i, s := range splits {
		last, cut, firstCut := "", -1, -1
		for j, r := range s {
			sc := fixedScript(r)
			if sc != "Any" && last != "Any" && last != sc {
				if cut >= 0 {
					dst = append(dst, s[cut:j])
				} else {
					firstCut = j
				}
				cut = j
			}
			if sc != "Any" {
				last = sc
			}
		}
		if cut >= 0 && cut < len(s) {
			dst = append(dst, s[cut:])
		}
		if i == 0 {
			first = atStart && firstCut == 0
		}
	}
	return dst, first
}

func fixedScript(r rune) string {
	switch {
	case r == 0x30FC:
		return "Han"
	case r == ' ':
		return "Any"
	case r == 0x061C: // ARABIC LETTER MARK: Common in HF's (older) script table
		return "Common"
	}
	sc := scriptOf(r)
	if sc == "Hiragana" || sc == "Katakana" {
		return "Han"
	}
	return sc
}

// scriptOf returns the Unicode script name of r ("Unknown" when none).
func scriptOf(r rune) string {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return "Common"
	}
	for _, name := range commonScripts {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	for name, t := range unicode.Scripts {
		if unicode.Is(t, r) {
			return name
		}
	}
	return "Unknown"
}

var commonScripts = []string{"Latin", "Common", "Inherited", "Han", "Hiragana", "Katakana", "Cyrillic", "Greek", "Arabic", "Hangul"}
