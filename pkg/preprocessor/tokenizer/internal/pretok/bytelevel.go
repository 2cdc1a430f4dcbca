package pretok

import (
	"encoding/json"
	"unsafe"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/bytelevel"
)

// byteLevel is HF's ByteLevel pre-tokenizer: optional prefix space, the
// GPT-2 regex split (Isolated), then every byte mapped to the GPT-2
// byte-level alphabet. trim_offsets only affects offsets and is ignored.
type byteLevel struct {
	addPrefixSpace bool
	useRegex       bool
}

func byteLevelFromJSON(raw []byte) (stage, error) {
	cfg := struct {
		AddPrefixSpace *bool `json:"add_prefix_space"`
		UseRegex       *bool `json:"use_regex"`
	}{}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	return byteLevel{
		addPrefixSpace: cfg.AddPrefixSpace == nil || *cfg.AddPrefixSpace,
		useRegex:       cfg.UseRegex == nil || *cfg.UseRegex,
	}, nil
}

// run encodes all splits into one allocation that the emitted pieces
// share (the pieces of a split are consecutive slices of its encoding).
func (b byteLevel) run(dst, splits []string, atStart bool) ([]string, bool) {
	size := 0
	for _, s := range splits {
		if s == "" {
			continue
		}
		size += bytelevel.EncodedLen(s)
		if b.prefix(s) {
			size += 2 // ' ' maps to the 2-byte 'Ġ'
		}
	}
	if size == 0 {
		return dst, false
	}
	buf := make([]byte, 0, size)
	for _, s := range splits {
		if s != "" && b.prefix(s) {
			buf = bytelevel.AppendEncode(buf, " ")
		}
		buf = bytelevel.AppendEncode(buf, s)
	}
	enc := unsafe.String(unsafe.SliceData(buf), len(buf))
	first := false
	epos := 0
	for i, s := range splits {
		if s == "" {
			continue
		}
		if i == 0 {
			first = atStart
		}
		src, pos := s, 0
		if b.prefix(s) {
			cl, size := classAt(s, 0)
			switch {
			case !b.useRegex:
				pos = len(s)
			case cl == cSpace:
				src = " " + s // rare: scan the real prefixed text
			default:
				// The added ' ' joins the run starting s.
				pos = run(s, size, cl)
			}
			if src == s {
				elen := 2 + bytelevel.EncodedLen(s[:pos])
				dst = append(dst, enc[epos:epos+elen])
				epos += elen
			}
		} else if !b.useRegex {
			elen := bytelevel.EncodedLen(s)
			dst = append(dst, enc[epos:epos+elen])
			epos += elen
			continue
		}
		for pos < len(src) {
			_, end, _ := gpt2{}.find(src, pos)
			elen := end - pos
			for k := pos; k < end; k++ {
				if c := src[k]; c < '!' || c > '~' {
					elen++
				}
			}
			dst = append(dst, enc[epos:epos+elen])
			pos, epos = end, epos+elen
		}
	}
	return dst, first
}

func (b byteLevel) prefix(s string) bool { return b.addPrefixSpace && s[0] != ' ' }
