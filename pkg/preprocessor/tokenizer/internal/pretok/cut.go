package pretok

import "strings"

// CutsAtSpace reports whether every space after an ASCII letter is a
// boundary between the splits p produces, such that the text on either
// side may be pre-tokenized on its own: for every x ending with an ASCII
// letter and every y,
//
//	p.PreTokenizeAt(x + " " + y, atStart) ==
//		p.PreTokenizeAt(x, atStart) followed by p.PreTokenizeAt(" " + y, false)
//
// The model then sees the same words either way. A nil pre-tokenizer (the
// whole text is one word) and unknown ones do not qualify.
func CutsAtSpace(p PreTokenizer) bool {
	im, ok := p.(impl)
	return ok && cutAtSpace(im.stage) == cut
}

// verdict tells what a stage does at a space after an ASCII letter, given
// a split that holds the space ("x y").
type verdict uint8

const (
	// mayDiffer: the splits may differ from those of "x" and " y".
	mayDiffer verdict = iota
	// joined: the splits are those of "x" then those of " y", except that
	// the last split of "x" and the first of " y" are one split; the text
	// is not rewritten (later stages still see "x y").
	joined
	// cut: the splits are those of "x" then those of " y". Later stages
	// work split by split, and the first split of " y" never starts the
	// input, so they give the same result either way.
	cut
)

func cutAtSpace(s stage) verdict {
	switch s := s.(type) {
	case sequence:
		for _, st := range s {
			if v := cutAtSpace(st); v != joined {
				return v
			}
		}
		return joined
	case byteLevel:
		// The GPT-2 regex: a letter run (` ?\p{L}+` or a contraction) ends
		// before the space and ` ?\p{L}+` starts at it. A split starting
		// with ' ' gets no prefix space.
		if s.useRegex {
			return cut
		}
	case metaspace:
		// The space becomes the replacement, which starts a split; a split
		// starting with the replacement gets no prefix.
		if s.split && !strings.ContainsAny(s.repl, asciiLetters) {
			return cut
		}
	case whitespace, whitespaceSplit, bertPre:
		// The space is removed and the letter before it ends a split.
		return cut
	case *splitter:
		return s.cutAtSpace()
	}
	// byteLevel without regex and metaspace without split rewrite the
	// space inside a split; unicodeScripts and fixedLength are not
	// analysed.
	return mayDiffer
}

const asciiLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// matches describes the matches of a finder around a space after an ASCII
// letter in "x y".
type matches uint8

const (
	matchesUnknown matches = iota
	// matchesBoundary: no match contains both the letter before the space
	// and the space, and the matches in "x y" are those in "x" followed
	// by those in " y" (shifted).
	matchesBoundary
	// matchesNone: the matches in "x y" are those in "x" followed by those
	// in " y"; none contains the space or the letter before it, so the
	// space lies in a gap between matches.
	matchesNone
)

func (sp *splitter) cutAtSpace() verdict {
	var m matches
	switch f := sp.f.(type) {
	case gpt2, llama, o200k, deepseek, clip:
		// Scanners of word-level patterns: the letter before the space
		// ends a match (a letter run, possibly after a one-rune prefix,
		// or a contraction), and as these scanners only look ahead, the
		// matches up to it are the same without the text after it (the
		// lookahead of `\s+(?!\S)` is only reached in a white-space
		// run, which the letter ends). From the space on, the scanner
		// sees the same text as in " y": every position is the start of
		// a match (GPT-2, Llama-3, Qwen2, o200k) or the space is (DeepSeek,
		// `\s+(?!\S)|\s+` at the latest) or it is never matched (CLIP).
		m = matchesBoundary
	case threeDigits, digits3, deepseekCJK:
		// These never match ASCII letters or ' ' (and a digit run cannot
		// go across them).
		m = matchesNone
	case literal:
		// An occurrence touching the space would contain it or the
		// letter before it.
		if f != "" && !strings.ContainsAny(string(f), asciiLetters+" ") {
			m = matchesNone
		}
	case runeFunc:
		// Every rune for which f is true is a match of its own.
		letter := false
		for _, c := range asciiLetters {
			letter = letter || f(c)
		}
		switch {
		case letter:
		case f(' '):
			m = matchesBoundary
		default:
			m = matchesNone
		}
	}
	switch m {
	case matchesBoundary:
		// Isolated and Removed keep or drop each match and gap on its own.
		if sp.b == isolated || sp.b == removed {
			return cut
		}
	case matchesNone:
		switch {
		case !sp.invert:
			// The gap around the space is kept as a split (Isolated,
			// Removed) or merged with the match before it
			// (MergedWithNext) or after it (MergedWithPrevious), and runs
			// of gaps and matches stay apart (Contiguous): it is joined.
			return joined
		case sp.b == isolated:
			return joined
		case sp.b == removed:
			// Inverted, the gap is a delimiter and is dropped.
			return cut
		}
	}
	return mayDiffer
}
