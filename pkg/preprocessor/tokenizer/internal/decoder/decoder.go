// Package decoder implements the decoders of a Hugging Face tokenizer.json
// ("decoder" section), turning token strings back into text exactly as the
// Rust tokenizers library does.
package decoder

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Decoder rewrites the list of token strings; the decoded text is the
// concatenation of the result (see Decode).
type Decoder interface {
	DecodeChain(tokens []string) []string
}

// Decode runs d over tokens and joins the result. A nil d joins the tokens
// with a space, as the Rust library does when there is no decoder.
func Decode(d Decoder, tokens []string) string {
	if d == nil {
		return strings.Join(tokens, " ")
	}
	return strings.Join(d.DecodeChain(tokens), "")
}

type header struct {
	Type string `json:"type"`
}

// FromJSON builds the decoder described by raw; JSON null gives nil, nil.
func FromJSON(raw json.RawMessage) (Decoder, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("tokenizer: decoder: %v", err)
	}
	switch h.Type {
	case "ByteLevel":
		return ByteLevel{}, nil
	case "ByteFallback":
		return ByteFallback{}, nil
	case "Fuse":
		return Fuse{}, nil
	case "Metaspace":
		return metaspaceFromJSON(raw)
	case "WordPiece":
		v := struct {
			Prefix  *string `json:"prefix"`
			Cleanup *bool   `json:"cleanup"`
		}{}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: decoder WordPiece: %v", err)
		}
		d := WordPiece{Prefix: "##", Cleanup: true}
		if v.Prefix != nil {
			d.Prefix = *v.Prefix
		}
		if v.Cleanup != nil {
			d.Cleanup = *v.Cleanup
		}
		return d, nil
	case "BPEDecoder":
		v := struct {
			Suffix *string `json:"suffix"`
		}{}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: decoder BPEDecoder: %v", err)
		}
		d := BPEDecoder{Suffix: "</w>"}
		if v.Suffix != nil {
			d.Suffix = *v.Suffix
		}
		return d, nil
	case "Strip":
		v := struct {
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}{}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: decoder Strip: %v", err)
		}
		r := []rune(v.Content)
		if len(r) != 1 {
			return nil, fmt.Errorf("tokenizer: decoder Strip: content must be one character, got %q", v.Content)
		}
		return Strip{Content: r[0], Start: v.Start, Stop: v.Stop}, nil
	case "Replace":
		return replaceFromJSON(raw)
	case "CTC":
		v := struct {
			Pad     *string `json:"pad_token"`
			Delim   *string `json:"word_delimiter_token"`
			Cleanup *bool   `json:"cleanup"`
		}{}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: decoder CTC: %v", err)
		}
		d := CTC{PadToken: "<pad>", WordDelimiterToken: "|", Cleanup: true}
		if v.Pad != nil {
			d.PadToken = *v.Pad
		}
		if v.Delim != nil {
			d.WordDelimiterToken = *v.Delim
		}
		if v.Cleanup != nil {
			d.Cleanup = *v.Cleanup
		}
		return d, nil
	case "Sequence":
		v := struct {
			Decoders []json.RawMessage `json:"decoders"`
		}{}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: decoder Sequence: %v", err)
		}
		var seq Sequence
		for _, sub := range v.Decoders {
			d, err := FromJSON(sub)
			if err != nil {
				return nil, err
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("tokenizer: unsupported decoder type %q", h.Type)
}

// Sequence applies decoders in order.
type Sequence []Decoder

// DecodeChain implements Decoder.
func (s Sequence) DecodeChain(tokens []string) []string {
	for _, d := range s {
		tokens = d.DecodeChain(tokens)
	}
	return tokens
}

// Fuse joins all tokens into one.
type Fuse struct{}

// DecodeChain implements Decoder.
func (Fuse) DecodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}
