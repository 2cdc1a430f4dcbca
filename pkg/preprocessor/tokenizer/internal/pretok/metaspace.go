package pretok

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

type prependScheme uint8

const (
	prependAlways prependScheme = iota
	prependFirst
	prependNever
)

// metaspace is HF's Metaspace pre-tokenizer: ' ' becomes the replacement
// rune, the replacement is prepended (always / only to the split starting
// the input / never) unless already there, then (split) every replacement
// rune starts a new piece.
type metaspace struct {
	repl   string
	scheme prependScheme
	split  bool
}

func metaspaceFromJSON(raw []byte) (stage, error) {
	var cfg struct {
		Replacement    string  `json:"replacement"`
		PrependScheme  *string `json:"prepend_scheme"`
		AddPrefixSpace *bool   `json:"add_prefix_space"` // legacy
		Split          *bool   `json:"split"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(cfg.Replacement) != 1 {
		return nil, errors.New("replacement must be one character")
	}
	m := metaspace{repl: cfg.Replacement, split: cfg.Split == nil || *cfg.Split}
	if cfg.PrependScheme != nil {
		switch *cfg.PrependScheme {
		case "always":
			m.scheme = prependAlways
		case "first":
			m.scheme = prependFirst
		case "never":
			m.scheme = prependNever
		default:
			return nil, errors.New("unknown prepend_scheme " + *cfg.PrependScheme)
		}
	}
	// As HF: a legacy add_prefix_space=false requires prepend_scheme
	// "never" (the scheme defaults to "always"); true changes nothing.
	if cfg.AddPrefixSpace != nil && !*cfg.AddPrefixSpace {
		if m.scheme != prependNever {
			return nil, errors.New("add_prefix_space does not match declared prepend_scheme")
		}
	}
	return m, nil
}

func (m metaspace) run(dst, splits []string, atStart bool) ([]string, bool) {
	first := false
	for i, s := range splits {
		n := len(dst)
		dst = m.one(dst, s, atStart && i == 0)
		if i == 0 {
			first = atStart && len(dst) > n
		}
	}
	return dst, first
}

func (m metaspace) one(dst []string, s string, first bool) []string {
	if s == "" {
		return dst
	}
	t := strings.ReplaceAll(s, " ", m.repl)
	if !strings.HasPrefix(t, m.repl) &&
		(m.scheme == prependAlways || m.scheme == prependFirst && first) {
		t = m.repl + t
	}
	if !m.split {
		return append(dst, t)
	}
	start := 0
	for {
		k := strings.Index(t[start+1:], m.repl)
		if k < 0 {
			break
		}
		dst = append(dst, t[start:start+1+k])
		start += 1 + k
	}
	return append(dst, t[start:])
}
