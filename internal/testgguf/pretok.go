package testgguf

import (
	"encoding/json"
	"fmt"
)

// Split regexes as they appear in tokenizer.json, and the
// tokenizer.ggml.pre name under which src/llama-vocab.cpp runs an
// equivalent expression (it quotes each of these as the "original regex
// from tokenizer.json" of the pre-tokenizer type it selects).
const (
	// regexQwen2 is Qwen2/Qwen2.5/Qwen3's: one digit per word.
	regexQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// regexLlama3 is Llama 3's: up to three digits per word.
	regexLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// regexQwen35 is Qwen3.5's: marks (\p{M}) join letters.
	regexQwen35 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// preBySplitRegex maps a Split pre-tokenizer's regex to tokenizer.ggml.pre.
var preBySplitRegex = map[string]string{
	regexQwen2:  "qwen2",
	regexLlama3: "llama-bpe",
	regexQwen35: "qwen35",
}

// ignoresMerges reports whether llama.cpp's BPE tokenizer looks a whole
// word up in the vocabulary before merging (ignore_merges) for a
// pre-tokenizer name; tokenizer.json's model.ignore_merges has to agree.
func ignoresMerges(pre string) bool { return pre == "llama-bpe" }

// preTokenizerJSON is the subset of a tokenizer.json pre_tokenizer that
// decides the llama.cpp pre-tokenizer.
type preTokenizerJSON struct {
	Type           string             `json:"type"`
	AddPrefixSpace bool               `json:"add_prefix_space"`
	UseRegex       *bool              `json:"use_regex"`
	Behavior       string             `json:"behavior"`
	Invert         bool               `json:"invert"`
	Pattern        *patternJSON       `json:"pattern"`
	Pretokenizers  []preTokenizerJSON `json:"pretokenizers"`
}

type patternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// choosePre returns the tokenizer.ggml.pre name under which llama.cpp
// pre-tokenizes like the pre_tokenizer raw: a plain ByteLevel with
// use_regex (GPT-2's expression) is "gpt-2"; a Sequence of an isolating
// Split on a known regex and a regex-free ByteLevel is that regex's name.
func choosePre(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", fmt.Errorf("%w: no pre_tokenizer (only ByteLevel pre-tokenization is supported)", ErrUnsupported)
	}
	var p preTokenizerJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("testgguf: pre_tokenizer: %w", err)
	}
	switch p.Type {
	case "ByteLevel":
		if p.UseRegex != nil && !*p.UseRegex {
			return "", fmt.Errorf("%w: ByteLevel pre_tokenizer without use_regex and without a Split", ErrUnsupported)
		}
		if p.AddPrefixSpace {
			return "", fmt.Errorf("%w: ByteLevel pre_tokenizer with add_prefix_space", ErrUnsupported)
		}
		return "gpt-2", nil
	case "Sequence":
		if len(p.Pretokenizers) != 2 || p.Pretokenizers[0].Type != "Split" || p.Pretokenizers[1].Type != "ByteLevel" {
			return "", fmt.Errorf("%w: pre_tokenizer Sequence %s (want [Split, ByteLevel])", ErrUnsupported, seqTypes(p.Pretokenizers))
		}
		split, bl := p.Pretokenizers[0], p.Pretokenizers[1]
		if bl.UseRegex == nil || *bl.UseRegex || bl.AddPrefixSpace {
			return "", fmt.Errorf("%w: ByteLevel after a Split must have use_regex false and add_prefix_space false", ErrUnsupported)
		}
		if split.Behavior != "Isolated" || split.Invert {
			return "", fmt.Errorf("%w: Split behavior %q invert %v (want Isolated, not inverted)", ErrUnsupported, split.Behavior, split.Invert)
		}
		if split.Pattern == nil || split.Pattern.Regex == nil {
			return "", fmt.Errorf("%w: Split without a Regex pattern", ErrUnsupported)
		}
		name, ok := preBySplitRegex[*split.Pattern.Regex]
		if !ok {
			return "", fmt.Errorf("%w: Split regex %q (known: Qwen2's, Llama 3's, Qwen3.5's)", ErrUnsupported, *split.Pattern.Regex)
		}
		return name, nil
	default:
		return "", fmt.Errorf("%w: pre_tokenizer type %q", ErrUnsupported, p.Type)
	}
}

func seqTypes(ps []preTokenizerJSON) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Type
	}
	return out
}
