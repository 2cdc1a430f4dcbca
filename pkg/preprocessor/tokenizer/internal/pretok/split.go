package pretok

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/normalize"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// behavior is HF's SplitDelimiterBehavior.
type behavior uint8

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

func parseBehavior(s string, def behavior) (behavior, error) {
	switch s {
	case "":
		return def, nil
	case "Removed":
		return removed, nil
	case "Isolated":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("unknown split behavior %q", s)
}

// finder finds the leftmost match in s starting at or after byte offset at.
type finder interface {
	find(s string, at int) (start, end int, ok bool)
}

// splitter splits one string by the matches of a finder (HF
// NormalizedString::split with a Pattern).
type splitter struct {
	f      finder
	b      behavior
	invert bool
}

// bulkFinder is a finder that is faster computing all matches at once.
type bulkFinder interface {
	finder
	all(dst [][2]int, s string) [][2]int
}

// segIter yields HF's find_matches list: the matches and the gaps between
// them, in order, each flagged (flag already inverted when invert is set).
type segIter struct {
	f       finder
	s       string
	pos     int // end of the last yielded segment
	ms, me  int // pending match, ms < 0 when none
	lastEnd int // end of the last match, -1 before the first
	invert  bool
	done    bool
	bulk    [][2]int // precomputed matches of a bulkFinder
	useBulk bool
}

func newSegIter(f finder, s string, invert bool) segIter {
	it := segIter{f: f, s: s, ms: -1, lastEnd: -1, invert: invert}
	if bf, ok := f.(bulkFinder); ok {
		it.bulk, it.useBulk = bf.all(nil, s), true
	}
	return it
}

func (it *segIter) next() (start, end int, match, ok bool) {
	if it.done {
		return 0, 0, false, false
	}
	if it.ms < 0 {
		ms, me, found := it.findNext()
		if !found {
			it.done = true
			if it.pos < len(it.s) {
				return it.pos, len(it.s), it.invert, true // trailing gap
			}
			return 0, 0, false, false
		}
		it.ms, it.me = ms, me
		if ms > it.pos {
			start = it.pos
			it.pos = ms
			return start, ms, it.invert, true
		}
	}
	start, end = it.ms, it.me
	it.pos, it.lastEnd, it.ms = end, end, -1
	return start, end, !it.invert, true
}

func (it *segIter) findNext() (int, int, bool) {
	if it.useBulk {
		if len(it.bulk) == 0 {
			return 0, 0, false
		}
		m := it.bulk[0]
		it.bulk = it.bulk[1:]
		return m[0], m[1], true
	}
	at := it.pos
	for at <= len(it.s) {
		ms, me, ok := it.f.find(it.s, at)
		if !ok {
			return 0, 0, false
		}
		if me > ms || ms != it.lastEnd {
			return ms, me, true
		}
		// An empty match right at the end of the previous match is not
		// accepted (onig / Rust regex find_iter); retry one rune further.
		if ms >= len(it.s) {
			return 0, 0, false
		}
		_, size := utf8.DecodeRuneInString(it.s[ms:])
		at = ms + size
	}
	return 0, 0, false
}

// split appends the pieces of s to dst; first reports whether the first
// appended piece begins at offset 0 of s.
func (sp *splitter) split(dst []string, s string) (out []string, first bool) {
	n := len(dst)
	first = true
	emit := func(a, b int) {
		if b > a {
			if len(dst) == n && a != 0 {
				first = false
			}
			dst = append(dst, s[a:b])
		}
	}
	it := newSegIter(sp.f, s, sp.invert)
	switch sp.b {
	case isolated:
		for {
			a, b, _, ok := it.next()
			if !ok {
				break
			}
			emit(a, b)
		}
	case removed:
		for {
			a, b, m, ok := it.next()
			if !ok {
				break
			}
			if !m {
				emit(a, b)
			}
		}
	case contiguous:
		pa, pb, pm, have := 0, 0, false, false
		for {
			a, b, m, ok := it.next()
			if !ok {
				break
			}
			if have && m == pm {
				pb = b
				continue
			}
			if have {
				emit(pa, pb)
			}
			pa, pb, pm, have = a, b, m, true
		}
		if have {
			emit(pa, pb)
		}
	case mergedWithPrevious:
		pa, pb, have, prevMatch := 0, 0, false, false
		for {
			a, b, m, ok := it.next()
			if !ok {
				break
			}
			if m && !prevMatch && have {
				pb = b
			} else {
				if have {
					emit(pa, pb)
				}
				pa, pb, have = a, b, true
			}
			prevMatch = m
		}
		if have {
			emit(pa, pb)
		}
	case mergedWithNext:
		pa, have := 0, false // pending match start
		for {
			a, b, m, ok := it.next()
			if !ok {
				break
			}
			switch {
			case have && !m:
				emit(pa, b)
				have = false
			case have && m:
				emit(pa, a)
				pa = a
			case m:
				pa, have = a, true
			default:
				emit(a, b)
			}
		}
		if have {
			emit(pa, len(s))
		}
	}
	if len(dst) == n {
		first = false
	}
	return dst, first
}

// run applies the splitter to every split.
func (sp *splitter) run(dst, splits []string, atStart bool) ([]string, bool) {
	first := false
	for i, s := range splits {
		var f bool
		dst, f = sp.split(dst, s)
		if i == 0 {
			first = atStart && f
		}
	}
	return dst, first
}

// literal finds a fixed string.
type literal string

func (l literal) find(s string, at int) (int, int, bool) {
	if l == "" {
		return 0, 0, false
	}
	i := strings.Index(s[at:], string(l))
	if i < 0 {
		return 0, 0, false
	}
	return at + i, at + i + len(l), true
}

// runeFunc matches every single rune for which the function is true (HF
// char / Fn(char) patterns: each rune is its own match).
type runeFunc func(rune) bool

func (f runeFunc) find(s string, at int) (int, int, bool) {
	for i := at; i < len(s); {
		r, size := decode(s, i)
		if f(r) {
			return i, i + size, true
		}
		i += size
	}
	return 0, 0, false
}

// regex2 is the fallback finder for patterns without a hand-written
// scanner (dlclark/regexp2, backtracking, .NET syntax close to Oniguruma's).
type regex2 struct{ re *regexp2.Regexp }

func (r regex2) find(s string, at int) (int, int, bool) {
	ms := r.all(nil, s[at:])
	if len(ms) == 0 {
		return 0, 0, false
	}
	return at + ms[0][0], at + ms[0][1], true
}

func (r regex2) all(dst [][2]int, s string) [][2]int {
	runes := []rune(s)
	m, err := r.re.FindRunesMatch(runes)
	ri, bi := 0, 0 // rune index ri is at byte offset bi
	adv := func(to int) int {
		for ; ri < to; ri++ {
			_, size := utf8.DecodeRuneInString(s[bi:])
			bi += size
		}
		return bi
	}
	for err == nil && m != nil {
		start := adv(m.Index)
		dst = append(dst, [2]int{start, adv(m.Index + m.Length)})
		m, err = r.re.FindNextMatch(m)
	}
	return dst
}

// newRegexFinder returns the hand-written scanner for a known pattern, or
// a regexp2 finder.
func newRegexFinder(pattern string) (finder, error) {
	if f := knownScanner(pattern); f != nil {
		return f, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	return regex2{re}, nil
}

func splitFromJSON(raw []byte) (stage, error) {
	var cfg struct {
		Pattern  normalize.Pattern `json:"pattern"`
		Behavior string            `json:"behavior"`
		Invert   bool              `json:"invert"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	b, err := parseBehavior(cfg.Behavior, removed)
	if err != nil {
		return nil, err
	}
	var f finder
	switch {
	case cfg.Pattern.String != nil:
		f = literal(*cfg.Pattern.String)
	case cfg.Pattern.Regex != nil:
		if f, err = newRegexFinder(*cfg.Pattern.Regex); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("pattern must be {\"String\": ...} or {\"Regex\": ...}")
	}
	return &splitter{f: f, b: b, invert: cfg.Invert}, nil
}
