package loadgen

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Prompt is one generated prompt.
type Prompt struct {
	// Text is the prompt: words separated by single spaces.
	Text string
	// Words is the number of words in Text, the approximate prompt length
	// in tokens.
	Words int
	// Group is the shared-prefix group, or -1 for synthetic prompts.
	Group int
}

// Synthetic builds unique prompts of a fixed length.
//
// Token lengths are approximated by words: every word but the first is
// drawn from a fixed list of short, frequent English words that common
// tokenizers encode as one token each, so a prompt of n words is about n
// tokens. The first word is the request number, which makes every prompt
// unique from its first token on (no accidental prefix-cache hits) and may
// take a few tokens itself; chat templates add their own tokens on top.
// When the server reports usage.prompt_tokens the report uses that
// instead of the word count.
type Synthetic struct {
	words int
	seed  uint64
}

// NewSynthetic returns a generator of prompts of n words (n ≥ 1) whose
// word choice is a pure function of (seed, request number).
func NewSynthetic(n int, seed uint64) *Synthetic {
	return &Synthetic{words: n, seed: seed}
}

// Prompt returns the prompt of request number n.
func (s *Synthetic) Prompt(n int) Prompt {
	rng := requestRand(s.seed, n)
	var b strings.Builder
	b.Grow(s.words * 7)
	b.WriteString(strconv.Itoa(n))
	appendWords(&b, rng, s.words-1)
	return Prompt{Text: b.String(), Words: s.words, Group: -1}
}

// SharedPrefix builds prompts that share a prefix within a group: each
// group has a fixed random prefix of prefixLen words, and each request is
// a group's prefix (the group drawn uniformly at random) followed by a
// unique suffix of suffixLen words whose first word is the request
// number. Words approximate tokens as in Synthetic.
type SharedPrefix struct {
	prefixes  []string
	prefixLen int
	suffixLen int
	seed      uint64
}

// NewSharedPrefix returns a generator with groups prefixes of prefixLen
// words and suffixes of suffixLen (≥ 1) words, all determined by seed.
func NewSharedPrefix(groups, prefixLen, suffixLen int, seed uint64) *SharedPrefix {
	s := &SharedPrefix{prefixLen: prefixLen, suffixLen: suffixLen, seed: seed}
	for g := range groups {
		rng := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(g)))
		var b strings.Builder
		b.Grow(prefixLen * 7)
		appendWords(&b, rng, prefixLen)
		s.prefixes = append(s.prefixes, strings.TrimPrefix(b.String(), " "))
	}
	return s
}

// Prompt returns the prompt of request number n.
func (s *SharedPrefix) Prompt(n int) Prompt {
	rng := requestRand(s.seed, n)
	g := rng.IntN(len(s.prefixes))
	var b strings.Builder
	b.Grow(len(s.prefixes[g]) + 1 + s.suffixLen*7)
	if s.prefixLen > 0 {
		b.WriteString(s.prefixes[g])
		b.WriteByte(' ')
	}
	b.WriteString(strconv.Itoa(n))
	appendWords(&b, rng, s.suffixLen-1)
	return Prompt{Text: b.String(), Words: s.prefixLen + s.suffixLen, Group: g}
}

// requestRand is the random source of request n: independent of which
// goroutine builds the prompt and when.
func requestRand(seed uint64, n int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(n)))
}

// appendWords writes n words, each preceded by a space.
func appendWords(b *strings.Builder, rng *rand.Rand, n int) {
	for range n {
		b.WriteByte(' ')
		b.WriteString(words[rng.IntN(len(words))])
	}
}
