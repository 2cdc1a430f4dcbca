package normalize

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

func unmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// Replace replaces every leftmost non-overlapping match of a pattern (a
// literal string or a regular expression) with Content (taken literally).
type Replace struct {
	// find appends the [start, end) byte offsets of every match in s.
	find    func(dst [][2]int, s string) [][2]int
	Content string
}

// NewReplaceString returns a Replace of the literal pattern (an empty
// pattern never matches, as in HF).
func NewReplaceString(pattern, content string) *Replace {
	return &Replace{find: literalFinder(pattern), Content: content}
}

// NewReplaceRegex returns a Replace of the regular expression pattern
// (Oniguruma syntax as in tokenizer.json; `\s+` has a hand-written matcher,
// any other pattern runs on dlclark/regexp2).
func NewReplaceRegex(pattern, content string) (*Replace, error) {
	if pattern == `\s+` {
		return &Replace{find: findSpaceRuns, Content: content}, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	return &Replace{find: regexFinder(re), Content: content}, nil
}

// Normalize implements Normalizer.
func (n *Replace) Normalize(s string) string {
	var stack [16][2]int
	ms := n.find(stack[:0], s)
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(ms)*len(n.Content))
	prev := 0
	for _, m := range ms {
		b.WriteString(s[prev:m[0]])
		b.WriteString(n.Content)
		prev = m[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}

func literalFinder(p string) func([][2]int, string) [][2]int {
	return func(dst [][2]int, s string) [][2]int {
		if p == "" {
			return dst
		}
		for at := 0; ; {
			i := strings.Index(s[at:], p)
			if i < 0 {
				return dst
			}
			dst = append(dst, [2]int{at + i, at + i + len(p)})
			at += i + len(p)
		}
	}
}

// findSpaceRuns finds the runs of White_Space runes (the regex `\s+`).
func findSpaceRuns(dst [][2]int, s string) [][2]int {
	start := -1
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if isSpace(r) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			dst = append(dst, [2]int{start, i})
			start = -1
		}
		i += size
	}
	if start >= 0 {
		dst = append(dst, [2]int{start, len(s)})
	}
	return dst
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.IsSpace(r)
}

// regexFinder adapts a regexp2 pattern (rune offsets) to byte offsets.
func regexFinder(re *regexp2.Regexp) func([][2]int, string) [][2]int {
	return func(dst [][2]int, s string) [][2]int {
		runes := []rune(s)
		m, err := re.FindRunesMatch(runes)
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
			end := adv(m.Index + m.Length)
			dst = append(dst, [2]int{start, end})
			m, err = re.FindNextMatch(m)
		}
		return dst
	}
}

// Prepend prepends a string to every non-empty input.
type Prepend struct {
	Prefix string
}

// Normalize implements Normalizer.
func (n Prepend) Normalize(s string) string {
	if s == "" {
		return s
	}
	return n.Prefix + s
}

func prependFromJSON(raw []byte) (Normalizer, error) {
	var cfg struct {
		Prepend string `json:"prepend"`
	}
	if err := unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	return Prepend{Prefix: cfg.Prepend}, nil
}

// Pattern is the tokenizer.json pattern object of Replace and Split:
// {"String": ...} or {"Regex": ...}; a bare JSON string is taken as a
// String pattern.
type Pattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// UnmarshalJSON accepts the object and the bare-string forms.
func (p *Pattern) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		p.String = &s
		return nil
	}
	type plain Pattern
	return json.Unmarshal(b, (*plain)(p))
}

func replaceFromJSON(raw []byte) (Normalizer, error) {
	var cfg struct {
		Pattern Pattern `json:"pattern"`
		Content string  `json:"content"`
	}
	if err := unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.Pattern.String != nil:
		return NewReplaceString(*cfg.Pattern.String, cfg.Content), nil
	case cfg.Pattern.Regex != nil:
		return NewReplaceRegex(*cfg.Pattern.Regex, cfg.Content)
	}
	return nil, errors.New("pattern must be {\"String\": ...} or {\"Regex\": ...}")
}
