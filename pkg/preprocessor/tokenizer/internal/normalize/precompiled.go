package normalize

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/rivo/uniseg"
)

// Precompiled is a SentencePiece precompiled charsmap normalizer (HF
// "Precompiled", Rust crate spm_precompiled): a darts-clone double-array
// trie mapping UTF-8 byte strings to offsets in a pool of NUL-terminated
// replacement strings.
//
// Like spm_precompiled, the text is processed one extended grapheme cluster
// at a time: a cluster shorter than 6 bytes whose bytes have a prefix in the
// trie is replaced as a whole by the replacement of its SHORTEST matching
// prefix (the rest of the cluster is dropped); otherwise each rune is looked
// up on its own and kept when absent.
type Precompiled struct {
	trie       []uint32
	normalized string
}

// NewPrecompiled parses a decoded precompiled_charsmap blob.
func NewPrecompiled(blob []byte) (*Precompiled, error) {
	if len(blob) == 0 {
		return &Precompiled{}, nil
	}
	if len(blob) < 4 {
		return nil, errors.New("precompiled charsmap too short")
	}
	trieSize := int(binary.LittleEndian.Uint32(blob))
	rest := blob[4:]
	if trieSize%4 != 0 || trieSize > len(rest) {
		return nil, errors.New("precompiled charsmap: bad trie size")
	}
	p := &Precompiled{trie: make([]uint32, trieSize/4)}
	for i := range p.trie {
		p.trie[i] = binary.LittleEndian.Uint32(rest[4*i:])
	}
	p.normalized = string(rest[trieSize:])
	return p, nil
}

func precompiledFromJSON(raw []byte) (Normalizer, error) {
	var cfg struct {
		Charsmap *string `json:"precompiled_charsmap"`
	}
	if err := unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	if cfg.Charsmap == nil || *cfg.Charsmap == "" {
		return &Precompiled{}, nil
	}
	blob, err := base64.StdEncoding.DecodeString(*cfg.Charsmap)
	if err != nil {
		return nil, err
	}
	return NewPrecompiled(blob)
}

// lookup returns the replacement of the shortest prefix of key found in the
// trie (darts-clone commonPrefixSearch, first result).
func (p *Precompiled) lookup(key string) (string, bool) {
	a := p.trie
	if len(a) == 0 {
		return "", false
	}
	pos := uint32(0)
	unit := a[0]
	pos ^= offset(unit)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == 0 {
			break
		}
		pos ^= uint32(c)
		if int(pos) >= len(a) {
			return "", false
		}
		unit = a[pos]
		if unit&((1<<31)|0xFF) != uint32(c) { // label
			return "", false
		}
		pos ^= offset(unit)
		if (unit>>8)&1 == 1 { // has leaf
			if int(pos) >= len(a) {
				return "", false
			}
			v := int(a[pos] & ((1 << 31) - 1))
			if v > len(p.normalized) {
				return "", false
			}
			end := strings.IndexByte(p.normalized[v:], 0)
			if end < 0 {
				end = len(p.normalized) - v
			}
			return p.normalized[v : v+end], true
		}
	}
	return "", false
}

func offset(unit uint32) uint32 { return (unit >> 10) << ((unit & (1 << 9)) >> 6) }

// Normalize implements Normalizer.
func (p *Precompiled) Normalize(s string) string {
	if len(p.trie) == 0 || s == "" {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	modified := false
	state := -1
	rest := s
	for len(rest) > 0 {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(g) < 6 {
			if norm, ok := p.lookup(g); ok {
				b.WriteString(norm)
				modified = true
				continue
			}
		}
		for i := 0; i < len(g); {
			size := runeLen(g[i:])
			if norm, ok := p.lookup(g[i : i+size]); ok {
				b.WriteString(norm)
				modified = true
			} else {
				b.WriteString(g[i : i+size])
			}
			i += size
		}
	}
	if !modified {
		return s
	}
	return b.String()
}

// runeLen is the byte length of the first rune of s (1 for invalid bytes).
func runeLen(s string) int {
	c := s[0]
	switch {
	case c < 0xC0:
		return 1
	case c < 0xE0 && len(s) >= 2:
		return 2
	case c < 0xF0 && len(s) >= 3:
		return 3
	case len(s) >= 4:
		return 4
	}
	return 1
}
