package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// AddedToken is one entry of the tokenizer.json "added_tokens" list.
type AddedToken struct {
	ID         uint32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// segment is a piece of input text; id >= 0 marks an added token.
type segment struct {
	text string
	id   int64
}

// matcher finds added tokens leftmost-longest (the semantics of the
// Aho-Corasick automaton used by the Rust library).
type matcher struct {
	first [256]bool
	edges map[uint64]int32
	term  []int32 // node -> index into toks, -1 if none
	toks  []*AddedToken

	// noLetterSpace: no pattern holds an ASCII letter followed by ' ', and
	// none is rstrip or single_word (see spaceSafe).
	noLetterSpace bool
	// longest is the length of the longest pattern.
	longest int
	// only is the first byte of every pattern when they all share it
	// (find jumps between its occurrences), else -1.
	only int
}

func newMatcher(patterns []string, toks []*AddedToken) *matcher {
	m := &matcher{edges: map[uint64]int32{}, term: []int32{-1}, toks: toks, noLetterSpace: true, only: -1}
	for i, p := range patterns {
		if p == "" {
			continue
		}
		if toks[i].RStrip || toks[i].SingleWord || hasLetterSpace(p) {
			m.noLetterSpace = false
		}
		switch {
		case m.longest == 0:
			m.only = int(p[0])
		case m.only != int(p[0]):
			m.only = -2 // more than one first byte
		}
		m.first[p[0]] = true
		m.longest = max(m.longest, len(p))
		node := int32(0)
		for j := 0; j < len(p); j++ {
			k := uint64(node)<<8 | uint64(p[j])
			c, ok := m.edges[k]
			if !ok {
				c = int32(len(m.term))
				m.term = append(m.term, -1)
				m.edges[k] = c
			}
			node = c
		}
		if m.term[node] < 0 {
			m.term[node] = int32(i) // first pattern wins on duplicates
		}
	}
	if m.only < 0 {
		m.only = -1
	}
	return m
}

// find returns the leftmost-longest match at or after from.
func (m *matcher) find(s string, from int) (start, end int, tok *AddedToken) {
	for i := from; i < len(s); i++ {
		if m.only >= 0 {
			k := strings.IndexByte(s[i:], byte(m.only))
			if k < 0 {
				break
			}
			i += k
		} else if !m.first[s[i]] {
			continue
		}
		node, best := int32(0), -1
		for j := i; j < len(s); j++ {
			c, ok := m.edges[uint64(node)<<8|uint64(s[j])]
			if !ok {
				break
			}
			node = c
			if t := m.term[node]; t >= 0 {
				best = j + 1
				tok = m.toks[t]
			}
		}
		if best >= 0 {
			return i, best, tok
		}
	}
	return -1, -1, nil
}

// spaceSafe reports whether splitting s (by m.split) gives the segments of
// x followed by those of " " + y, whenever s is x + " " + y with x ending
// with an ASCII letter. It does when no pattern holds such a letter
// followed by a space: no match then spans the cut, the leftmost-longest
// search finds the same matches on both sides, and lstrip only looks back
// over white space, which stops at the letter. rstrip (it would swallow
// the space after a match ending x) and single_word (a match starting
// with the space sees a word before it, or the start of " " + y) are
// ruled out.
func (m *matcher) spaceSafe() bool { return m == nil || len(m.toks) == 0 || m.noLetterSpace }

func hasLetterSpace(p string) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i+1] == ' ' && ('a' <= p[i] && p[i] <= 'z' || 'A' <= p[i] && p[i] <= 'Z') {
			return true
		}
	}
	return false
}

// split appends the segments of s to dst: the added tokens found (with
// single_word, lstrip and rstrip applied as in AddedVocabulary::find_matches)
// and the text between them.
func (m *matcher) split(dst []segment, s string, idOf func(*AddedToken) uint32) []segment {
	return m.splitFrom(dst, s, 0, idOf)
}

// splitFrom is split of s[from:] as it goes on in s: from is 0 or a place
// the split of s cuts at, and matches look back before from (single_word,
// lstrip) as they would in s.
func (m *matcher) splitFrom(dst []segment, s string, from int, idOf func(*AddedToken) uint32) []segment {
	if m == nil || len(m.toks) == 0 {
		if from > 0 && from == len(s) {
			return dst
		}
		return append(dst, segment{text: s[from:], id: -1})
	}
	startOffset := from
	for pos := from; pos < len(s); {
		start, stop, tok := m.find(s, pos)
		if tok == nil {
			break
		}
		pos = stop
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			ns := start
			for ns > 0 {
				r, size := utf8.DecodeLastRuneInString(s[:ns])
				if !unicode.IsSpace(r) {
					break
				}
				ns -= size
			}
			start = max(ns, startOffset)
		}
		if tok.RStrip {
			for stop < len(s) {
				r, size := utf8.DecodeRuneInString(s[stop:])
				if !unicode.IsSpace(r) {
					break
				}
				stop += size
			}
			pos = max(pos, stop)
		}
		if startOffset < start {
			dst = append(dst, segment{text: s[startOffset:start], id: -1})
		}
		dst = append(dst, segment{text: s[start:stop], id: int64(idOf(tok))})
		startOffset = stop
	}
	if startOffset < len(s) {
		dst = append(dst, segment{text: s[startOffset:], id: -1})
	}
	return dst
}

// isWordChar is the Unicode \w of the Rust regex crate.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r) ||
		unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Join_Control, r) ||
		unicode.Is(unicode.Other_Alphabetic, r)
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}
