package decoder

import (
	"encoding/json"
	"fmt"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/normalize"
	"strings"
)

// Metaspace turns the replacement character back into spaces; in the first
// token every replacement character is dropped unless the prepend scheme is
// "never" (the Rust behaviour).
type Metaspace struct {
	Replacement rune
	// PrependScheme is "always", "first" or "never".
	PrependScheme string
}

func metaspaceFromJSON(raw json.RawMessage) (Decoder, error) {
	v := struct {
		Replacement    *string `json:"replacement"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
		PrependScheme  *string `json:"prepend_scheme"`
	}{}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("tokenizer: decoder Metaspace: %v", err)
	}
	d := Metaspace{Replacement: '▁', PrependScheme: "always"}
	if v.Replacement != nil {
		r := []rune(*v.Replacement)
		if len(r) != 1 {
			return nil, fmt.Errorf("tokenizer: decoder Metaspace: replacement must be one character")
		}
		d.Replacement = r[0]
	}
	switch {
	case v.PrependScheme != nil:
		switch *v.PrependScheme {
		case "always", "first", "never":
			d.PrependScheme = *v.PrependScheme
		default:
			return nil, fmt.Errorf("tokenizer: decoder Metaspace: bad prepend_scheme %q", *v.PrependScheme)
		}
	case v.AddPrefixSpace != nil && !*v.AddPrefixSpace:
		d.PrependScheme = "never"
	}
	return d, nil
}

// DecodeChain implements Decoder.
func (m Metaspace) DecodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		if !strings.ContainsRune(t, m.Replacement) {
			out[i] = t
			continue
		}
		var b strings.Builder
		for _, r := range t {
			if r == m.Replacement {
				if i == 0 && m.PrependScheme != "never" {
					continue
				}
				b.WriteByte(' ')
				continue
			}
			b.WriteRune(r)
		}
		out[i] = b.String()
	}
	return out
}

// WordPiece glues "##" continuation pieces and separates words by spaces,
// optionally applying the BERT tokenization-space cleanup.
type WordPiece struct {
	Prefix  string
	Cleanup bool
}

// DecodeChain implements Decoder.
func (w WordPiece) DecodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		if i != 0 {
			if strings.HasPrefix(t, w.Prefix) {
				t = strings.Replace(t, w.Prefix, "", 1)
			} else {
				t = " " + t
			}
		}
		if w.Cleanup {
			t = Cleanup(t)
		}
		out[i] = t
	}
	return out
}

var cleanupReplacer = []struct{ old, new string }{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
	{" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"},
	{" 've", "'ve"}, {" 're", "'re"},
}

// Cleanup is the WordPiece/CTC cleanup of the Rust library (applied in
// sequence, like chained str::replace calls).
func Cleanup(s string) string {
	for _, r := range cleanupReplacer {
		s = strings.ReplaceAll(s, r.old, r.new)
	}
	return s
}

// BPEDecoder replaces the end-of-word suffix by a space (nothing on the
// last token).
type BPEDecoder struct{ Suffix string }

// DecodeChain implements Decoder.
func (d BPEDecoder) DecodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		rep := " "
		if i == len(tokens)-1 {
			rep = ""
		}
		if d.Suffix == "" {
			out[i] = t
			continue
		}
		out[i] = strings.ReplaceAll(t, d.Suffix, rep)
	}
	return out
}

// Strip removes up to Start leading and Stop trailing Content characters
// from every token.
type Strip struct {
	Content     rune
	Start, Stop int
}

// DecodeChain implements Decoder.
func (s Strip) DecodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		r := []rune(t)
		startCut := 0
		for k := 0; k < s.Start && k < len(r); k++ {
			if r[k] != s.Content {
				break
			}
			startCut = k + 1
		}
		stopCut := len(r)
		for k := 0; k < s.Stop && k < len(r); k++ {
			idx := len(r) - k - 1
			if r[idx] != s.Content {
				break
			}
			stopCut = idx
		}
		if stopCut < startCut {
			stopCut = startCut
		}
		out[i] = string(r[startCut:stopCut])
	}
	return out
}

// Replace replaces every match of a literal string or regular expression
// in each token.
type Replace struct {
	literal string
	re      *normalize.Replace // a regex pattern: the normalizer's (regexp2, Oniguruma syntax)
	content string
}

func replaceFromJSON(raw json.RawMessage) (Decoder, error) {
	v := struct {
		Pattern normalize.Pattern `json:"pattern"`
		Content string            `json:"content"`
	}{}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("tokenizer: decoder Replace: %v", err)
	}
	d := Replace{content: v.Content}
	switch {
	case v.Pattern.String != nil:
		d.literal = *v.Pattern.String
	case v.Pattern.Regex != nil:
		re, err := normalize.NewReplaceRegex(*v.Pattern.Regex, v.Content)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: decoder Replace: unsupported regex %q: %v", *v.Pattern.Regex, err)
		}
		d.re = re
	default:
		return nil, fmt.Errorf("tokenizer: decoder Replace: missing pattern")
	}
	return d, nil
}

// NewReplace returns a Replace decoder for a literal pattern.
func NewReplace(pattern, content string) Replace { return Replace{literal: pattern, content: content} }

// DecodeChain implements Decoder.
func (d Replace) DecodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		switch {
		case d.re != nil:
			out[i] = d.re.Normalize(t)
		case d.literal == "":
			out[i] = t
		default:
			out[i] = strings.ReplaceAll(t, d.literal, d.content)
		}
	}
	return out
}

// CTC collapses repeated tokens, removes padding and turns the word
// delimiter into spaces.
type CTC struct {
	PadToken           string
	WordDelimiterToken string
	Cleanup            bool
}

// DecodeChain implements Decoder.
func (c CTC) DecodeChain(tokens []string) []string {
	var out []string
	for i, t := range tokens {
		if i > 0 && t == tokens[i-1] {
			continue
		}
		if c.PadToken != "" {
			t = strings.ReplaceAll(t, c.PadToken, "")
		}
		if c.Cleanup {
			t = Cleanup(t)
			if c.WordDelimiterToken != "" {
				t = strings.ReplaceAll(t, c.WordDelimiterToken, " ")
			}
		}
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}
