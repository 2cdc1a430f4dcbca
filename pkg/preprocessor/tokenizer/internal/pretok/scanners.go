package pretok

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the regular expressions real tokenizer.json
// files use. Each reproduces Oniguruma's leftmost-first backtracking
// semantics for its exact pattern (verified against regexp2 in tests).

// Pattern strings with a hand-written scanner.
const (
	// PatternGPT2 is the ByteLevel pre-tokenizer's default (GPT-2) regex.
	PatternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// PatternLlama3 is the Llama-3 (cl100k-like) Split regex.
	PatternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternQwen2 is the Qwen2/2.5/3 Split regex (single digits).
	PatternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternCLIP is CLIP's Split regex (used inverted).
	PatternCLIP = `<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+`
	// PatternThreeDigits is Falcon's Split regex.
	PatternThreeDigits = `[0-9][0-9][0-9]`
)

func knownScanner(p string) finder {
	switch p {
	case PatternGPT2:
		return gpt2{}
	case PatternLlama3:
		return llama{maxDigits: 3}
	case PatternQwen2:
		return llama{maxDigits: 1}
	case PatternCLIP:
		return clip{}
	case PatternThreeDigits:
		return threeDigits{}
	case PatternO200k:
		return o200k{}
	case PatternDeepSeekV3:
		return deepseek{}
	case PatternDeepSeekCJK:
		return deepseekCJK{}
	case PatternDigits3:
		return digits3{}
	}
	return nil
}

// Character classes of the patterns: \p{L}, \p{N}, \s, and the rest.
const (
	cOther uint8 = iota
	cLetter
	cNumber
	cSpace
)

var asciiClass [utf8.RuneSelf]uint8

func init() {
	for c := 0; c < utf8.RuneSelf; c++ {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			asciiClass[c] = cLetter
		case '0' <= c && c <= '9':
			asciiClass[c] = cNumber
		case c == ' ', '\t' <= c && c <= '\r':
			asciiClass[c] = cSpace
		}
	}
}

func decode(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func class(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case unicode.IsLetter(r):
		return cLetter
	case unicode.IsNumber(r):
		return cNumber
	case unicode.IsSpace(r):
		return cSpace
	}
	// Unicode 16 letters and digits Oniguruma knows but Go's tables lack.
	if r >= min(hfLetterAddMin, hfNumberAddMin) {
		if unicode.Is(hfLetterAdd, r) {
			return cLetter
		}
		if unicode.Is(hfNumberAdd, r) {
			return cNumber
		}
	}
	return cOther
}

// classAt returns the class and size of the rune at s[i].
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return class(r), size
}

// run returns the end of the run of class cl starting at i.
func run(s string, i int, cl uint8) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiClass[c] != cl {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if class(r) != cl {
			return i
		}
		i += size
	}
	return i
}

// contraction returns the length of the contraction suffix (s|t|re|ve|m|ll|d)
// at s[i:], 0 when none. With fold, matching is case-insensitive as in
// Oniguruma, where U+017F (long s) folds to 's'.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) {
		return 0
	}
	c := s[i]
	if fold {
		if c == 0xC5 && i+1 < len(s) && s[i+1] == 0xBF { // U+017F
			return 2
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
	}
	switch c {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v', 'l':
		if i+1 >= len(s) {
			return 0
		}
		d := s[i+1]
		if fold && 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if (c == 'r' || c == 'v') && d == 'e' || c == 'l' && d == 'l' {
			return 2
		}
	}
	return 0
}

// gpt2 matches PatternGPT2. Every position starts a match.
type gpt2 struct{}

func (gpt2) find(s string, i int) (int, int, bool) {
	if i >= len(s) {
		return 0, 0, false
	}
	c := s[i]
	if c == '\'' {
		if n := contraction(s, i+1, false); n > 0 {
			return i, i + 1 + n, true
		}
	}
	if c == ' ' && i+1 < len(s) {
		if cl, size := classAt(s, i+1); cl != cSpace {
			return i, run(s, i+1+size, cl), true
		}
	}
	cl, size := classAt(s, i)
	if cl != cSpace {
		return i, run(s, i+size, cl), true
	}
	return i, spaceRunEnd(s, i, size), true
}

// spaceRunEnd implements `\s+(?!\S)|\s+` at a white-space rune of the
// given size at i: the whole run at the end of input, else the run minus
// its last rune, else (a single rune followed by non-space) that rune.
func spaceRunEnd(s string, i, size int) int {
	j, last := i+size, i
	for j < len(s) {
		cl, sz := classAt(s, j)
		if cl != cSpace {
			break
		}
		last = j
		j += sz
	}
	if j == len(s) || last == i {
		return j
	}
	return last
}

// llama matches PatternLlama3 (maxDigits 3) and PatternQwen2 (maxDigits 1).
type llama struct{ maxDigits int }

func (m llama) find(s string, i int) (int, int, bool) {
	if i >= len(s) {
		return 0, 0, false
	}
	c := s[i]
	if c == '\'' {
		if n := contraction(s, i+1, true); n > 0 {
			return i, i + 1 + n, true
		}
	}
	cl, size := classAt(s, i)
	if cl == cLetter {
		return i, run(s, i+size, cLetter), true
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ with the optional prefix.
	if c != '\r' && c != '\n' && cl != cNumber && i+size < len(s) {
		if cl2, size2 := classAt(s, i+size); cl2 == cLetter {
			return i, run(s, i+size+size2, cLetter), true
		}
	}
	switch cl {
	case cNumber:
		j := i + size
		for k := 1; k < m.maxDigits && j < len(s); k++ {
			cl2, sz := classAt(s, j)
			if cl2 != cNumber {
				break
			}
			j += sz
		}
		return i, j, true
	case cOther:
		return i, newlines(s, run(s, i+size, cOther)), true
	}
	// White space: ` ?[^\s\p{L}\p{N}]+[\r\n]*` first.
	if c == ' ' && i+1 < len(s) {
		if cl2, size2 := classAt(s, i+1); cl2 == cOther {
			return i, newlines(s, run(s, i+1+size2, cOther)), true
		}
	}
	// \s*[\r\n]+ : up to the last \r or \n of the white-space run.
	j, last, nl := i, i, -1
	for j < len(s) {
		cl2, sz := classAt(s, j)
		if cl2 != cSpace {
			break
		}
		if s[j] == '\r' || s[j] == '\n' {
			nl = j + 1
		}
		last = j
		j += sz
	}
	switch {
	case nl >= 0:
		return i, nl, true
	case j == len(s) || last == i:
		return i, j, true
	}
	return i, last, true
}

// newlines skips [\r\n]* from i.
func newlines(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// clip matches PatternCLIP; white space is never matched.
type clip struct{}

func (clip) find(s string, i int) (int, int, bool) {
	for i < len(s) {
		c := s[i]
		if c == '<' {
			if strings.HasPrefix(s[i:], "<|startoftext|>") {
				return i, i + len("<|startoftext|>"), true
			}
			if strings.HasPrefix(s[i:], "<|endoftext|>") {
				return i, i + len("<|endoftext|>"), true
			}
		}
		if c == '\'' {
			if n := contraction(s, i+1, false); n > 0 {
				return i, i + 1 + n, true
			}
		}
		cl, size := classAt(s, i)
		switch cl {
		case cLetter, cOther:
			return i, run(s, i+size, cl), true
		case cNumber:
			return i, i + size, true
		}
		i += size
	}
	return 0, 0, false
}

// threeDigits matches PatternThreeDigits.
type threeDigits struct{}

func (threeDigits) find(s string, i int) (int, int, bool) {
	n := 0
	for ; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			n++
			if n == 3 {
				return i - 2, i + 1, true
			}
		} else {
			n = 0
		}
	}
	return 0, 0, false
}
