package pretok

import (
	"unicode"
	"unicode/utf8"
)

// Scanners for patterns using general categories beyond \p{L}/\p{N}:
// o200k (GPT-4o, gpt-oss) and DeepSeek-V3. Like the others they
// reproduce Oniguruma's leftmost-first backtracking for the exact pattern.

const (
	// PatternO200k is the o200k_base (GPT-4o / gpt-oss) Split regex.
	PatternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternDeepSeekV3 is the third Split regex of DeepSeek-V3's
	// pre-tokenizer Sequence.
	PatternDeepSeekV3 = `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + "`" + `{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternDeepSeekCJK is the second Split regex of DeepSeek-V3's
	// Sequence: runs of CJK ideographs (U+4E00–U+9FA5), hiragana and katakana.
	PatternDeepSeekCJK = `[一-龥぀-ゟ゠-ヿ]+`
	// PatternDigits3 is the first Split regex of DeepSeek-V3's Sequence.
	PatternDigits3 = `\p{N}{1,3}`
)

// Category bits of a rune (Oniguruma / Unicode 16 classes).
const (
	fU  uint8 = 1 << iota // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	fW                    // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	fL                    // \p{L}
	fN                    // \p{N}
	fSp                   // \s
	fM                    // \p{M}
	fPS                   // [\p{P}\p{S}]
)

var asciiCat [utf8.RuneSelf]uint8

func init() {
	for c := 0; c < utf8.RuneSelf; c++ {
		switch {
		case 'A' <= c && c <= 'Z':
			asciiCat[c] = fU | fL
		case 'a' <= c && c <= 'z':
			asciiCat[c] = fW | fL
		case '0' <= c && c <= '9':
			asciiCat[c] = fN
		case c == ' ', '\t' <= c && c <= '\r':
			asciiCat[c] = fSp
		case '!' <= c && c <= '~':
			asciiCat[c] = fPS
		}
	}
}

func catOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiCat[r]
	}
	switch class(r) {
	case cLetter:
		switch {
		case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3041 && r <= 0x3096, r >= 0xAC00 && r <= 0xD7A3:
			return fU | fW | fL // CJK ideographs, hiragana, Hangul syllables: Lo
		case unicode.Is(unicode.Ll, r) || unicode.Is(hfLlAdd, r):
			return fW | fL
		case unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) || unicode.Is(hfLuAdd, r) || unicode.Is(hfLtAdd, r):
			return fU | fL
		}
		return fU | fW | fL // Lm, Lo
	case cNumber:
		return fN
	case cSpace:
		return fSp
	}
	switch {
	case unicode.Is(unicode.M, r) || unicode.Is(hfMAdd, r):
		return fU | fW | fM
	case unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.Is(hfPAdd, r) || unicode.Is(hfSAdd, r):
		return fPS
	}
	return 0
}

// catAt returns the category bits and size of the rune at s[i].
func catAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiCat[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return catOf(r), size
}

// catRun returns the end of the run of runes with any of the bits in mask
// from i.
func catRun(s string, i int, mask uint8) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiCat[c]&mask == 0 {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if catOf(r)&mask == 0 {
			return i
		}
		i += size
	}
	return i
}

// spaceAlts implements `\s*[\r\n]+|\s+(?!\S)|\s+` at a white-space rune at i.
func spaceAlts(s string, i int) int {
	j, last, nl := i, i, -1
	for j < len(s) {
		cl, sz := classAt(s, j)
		if cl != cSpace {
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
		return nl
	case j == len(s) || last == i:
		return j
	}
	return last
}

// foldContraction matches the optional (?i:'s|'t|'re|'ve|'m|'ll|'d) at e.
func foldContraction(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		if n := contraction(s, e+1, true); n > 0 {
			return e + 1 + n
		}
	}
	return e
}

// o200k matches PatternO200k. Every position starts a match.
type o200k struct{}

// lowerWord matches U*W+ contraction? at j (-1 when none): U* greedy,
// backtracking to the last rune that is also in W when the rune after
// the U run is not in W.
func lowerWord(s string, j int) int {
	k, lastW := j, -1
	for k < len(s) {
		f, sz := catAt(s, k)
		if f&fU == 0 {
			if f&fW != 0 { // Ll: W+ continues from here
				return foldContraction(s, catRun(s, k+sz, fW))
			}
			break
		}
		k += sz
		if f&fW != 0 {
			lastW = k
		}
	}
	if lastW < 0 {
		return -1
	}
	// W+ from the last U∩W rune: the runes after it (Lu/Lt, then a rune
	// outside W) end it at once.
	return foldContraction(s, lastW)
}

// upperWord matches U+W* contraction? at j (-1 when none).
func upperWord(s string, j int) int {
	k := catRun(s, j, fU)
	if k == j {
		return -1
	}
	return foldContraction(s, catRun(s, k, fW))
}

func (o200k) find(s string, i int) (int, int, bool) {
	if i >= len(s) {
		return 0, 0, false
	}
	c := s[i]
	f, size := catAt(s, i)
	prefix := f&(fL|fN) == 0 && c != '\r' && c != '\n' && i+size < len(s)
	if prefix {
		if e := lowerWord(s, i+size); e >= 0 {
			return i, e, true
		}
	}
	if f&(fU|fW) != 0 {
		if e := lowerWord(s, i); e >= 0 {
			return i, e, true
		}
	}
	if prefix {
		if e := upperWord(s, i+size); e >= 0 {
			return i, e, true
		}
	}
	if f&fU != 0 {
		return i, upperWord(s, i), true
	}
	if f&fN != 0 {
		j := i + size
		for k := 1; k < 3 && j < len(s); k++ {
			f2, sz := catAt(s, j)
			if f2&fN == 0 {
				break
			}
			j += sz
		}
		return i, j, true
	}
	const notOther = fL | fN | fSp
	if f&notOther == 0 {
		return i, newlinesSlash(s, catRunNot(s, i+size, notOther)), true
	}
	// White space: ` ?[^\s\p{L}\p{N}]+[\r\n/]*` first.
	if c == ' ' && i+1 < len(s) {
		if f2, size2 := catAt(s, i+1); f2&notOther == 0 {
			return i, newlinesSlash(s, catRunNot(s, i+1+size2, notOther)), true
		}
	}
	return i, spaceAlts(s, i), true
}

// catRunNot returns the end of the run of runes with none of the bits in
// mask from i.
func catRunNot(s string, i int, mask uint8) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiCat[c]&mask != 0 {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if catOf(r)&mask != 0 {
			return i
		}
		i += size
	}
	return i
}

// newlinesSlash skips [\r\n/]* from i.
func newlinesSlash(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n' || s[i] == '/') {
		i++
	}
	return i
}

// deepseek matches PatternDeepSeekV3; runes that are neither letters,
// marks, punctuation, symbols nor white space (digits, controls, ...) not
// followed by a letter or mark are never matched.
type deepseek struct{}

func isASCIIAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func (deepseek) find(s string, i int) (int, int, bool) {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf && asciiCat[c] == fPS && i+1 < len(s) && isASCIIAlpha(s[i+1]) {
			e := i + 2
			for e < len(s) && isASCIIAlpha(s[e]) {
				e++
			}
			return i, e, true
		}
		f, size := catAt(s, i)
		if f&(fL|fM) != 0 {
			return i, catRun(s, i+size, fL|fM), true
		}
		if f&(fL|fPS) == 0 && c != '\r' && c != '\n' && i+size < len(s) {
			if f2, size2 := catAt(s, i+size); f2&(fL|fM) != 0 {
				return i, catRun(s, i+size+size2, fL|fM), true
			}
		}
		if f&fPS != 0 {
			return i, newlines(s, catRun(s, i+size, fPS)), true
		}
		if c == ' ' && i+1 < len(s) {
			if f2, size2 := catAt(s, i+1); f2&fPS != 0 {
				return i, newlines(s, catRun(s, i+1+size2, fPS)), true
			}
		}
		if f&fSp != 0 {
			return i, spaceAlts(s, i), true
		}
		i += size
	}
	return 0, 0, false
}

// deepseekCJK matches PatternDeepSeekCJK.
type deepseekCJK struct{}

func isDeepSeekCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FA5 || r >= 0x3040 && r <= 0x30FF
}

func (deepseekCJK) find(s string, i int) (int, int, bool) {
	for i < len(s) {
		if s[i] < 0xE3 || s[i] > 0xE9 { // 3-byte lead bytes of U+3000–U+9FFF
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isDeepSeekCJK(r) {
			i += size
			continue
		}
		e := i + size
		for e < len(s) {
			r2, sz := utf8.DecodeRuneInString(s[e:])
			if !isDeepSeekCJK(r2) {
				break
			}
			e += sz
		}
		return i, e, true
	}
	return 0, 0, false
}

// digits3 matches PatternDigits3: up to three \p{N} runes.
type digits3 struct{}

func (digits3) find(s string, i int) (int, int, bool) {
	for i < len(s) {
		cl, size := classAt(s, i)
		if cl != cNumber {
			i += size
			continue
		}
		j := i + size
		for k := 1; k < 3 && j < len(s); k++ {
			cl2, sz := classAt(s, j)
			if cl2 != cNumber {
				break
			}
			j += sz
		}
		return i, j, true
	}
	return 0, 0, false
}
