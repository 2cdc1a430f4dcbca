package normalize

// SplitsAtSpace reports whether n may be applied on either side of a space
// that sits between ASCII letters: for every x ending with two ASCII
// letters and y starting with one,
//
//	n(x + " " + y) == n(x) + n(" " + y)
//
// where n(x) still ends with an ASCII letter and n(" " + y) still starts
// with the space. Texts can then be cut before such a space, each part
// normalized on its own, with the same result. A nil normalizer qualifies;
// an unknown one does not.
func SplitsAtSpace(n Normalizer) bool {
	switch n := n.(type) {
	case nil:
		return true
	case NFC, NFD, NFKC, NFKD:
		// ' ' has canonical combining class 0 and is never the second
		// part of a composition: it starts a new normalization segment
		// and no character before it can combine with anything after it.
		// ASCII letters and ' ' are their own normal form, and an ASCII
		// letter is never the second part of a composition either.
		return true
	case Lowercase, StripAccents, Nmt:
		// Rune by rune (Lowercase is context free, see lowercase); ASCII
		// letters stay ASCII letters and ' ' stays ' '.
		return true
	case Bert:
		// Each step is rune by rune (clean_text, Chinese characters,
		// lowercase) or NFD followed by a rune filter.
		return true
	case *Precompiled:
		// One extended grapheme cluster at a time, and ' ' between two
		// ASCII letters is a cluster of its own (UAX #29: nothing but
		// CR LF, Extend, ZWJ, SpacingMark and Prepend sequences join),
		// as is the letter before it, which follows a letter, not a
		// Prepend character. Their replacements are checked here.
		if n.Normalize(" ") != " " {
			return false
		}
		for c := 'A'; c <= 'z'; c++ {
			if 'Z' < c && c < 'a' {
				continue
			}
			if out := n.Normalize(string(c)); out == "" || !isASCIILetter(out[len(out)-1]) {
				return false
			}
		}
		return true
	case Sequence:
		for _, m := range n {
			if !SplitsAtSpace(m) {
				return false
			}
		}
		return true
	}
	// Strip and Prepend act at the ends of the text, Replace patterns may
	// span the space, ByteLevel rewrites it.
	return false
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
