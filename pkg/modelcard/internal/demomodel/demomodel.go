package demomodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Shape of the demo model.
const (
	// VocabSize is the total number of tokens: 256 bytes, the merges, and
	// the special tokens.
	VocabSize = 512
	// ContextLength is max_position_embeddings and model_max_length.
	ContextLength = 4096
)

// Special tokens, in id order after the BPE vocabulary.
var Specials = []string{"<|endoftext|>", "<|begin_of_text|>", "<|im_start|>", "<|im_end|>"}

// ChatTemplate is the demo model's ChatML chat template.
const ChatTemplate = "{%- for message in messages %}" +
	"{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
	"{%- endfor %}" +
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"

// Files returns the demo model's files by name.
func Files() (map[string][]byte, error) {
	order, char := byteChars()
	nMerges := VocabSize - len(order) - len(Specials)
	merges := learnMerges(corpus, nMerges, char)
	if len(merges) != nMerges {
		return nil, fmt.Errorf("demomodel: corpus gives %d merges, want %d", len(merges), nMerges)
	}

	var vocab orderedVocab
	for _, b := range order {
		vocab = append(vocab, string(char[b]))
	}
	mergeStrs := make([]string, len(merges))
	for i, m := range merges {
		vocab = append(vocab, m[0]+m[1])
		mergeStrs[i] = m[0] + " " + m[1]
	}
	ids := map[string]int{}
	var added []addedToken
	for i, s := range Specials {
		id := len(vocab) + i
		ids[s] = id
		added = append(added, addedToken{ID: id, Content: s, Special: true})
	}

	byteLevel := func(prefix, trim bool) map[string]any {
		return map[string]any{"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": trim, "use_regex": true}
	}
	tok := tokenizerJSON{
		Version:       "1.0",
		AddedTokens:   added,
		PreTokenizer:  byteLevel(false, true),
		PostProcessor: byteLevel(true, false),
		Decoder:       byteLevel(true, true),
		Model: bpeModel{
			Type: "BPE", ContinuingSubwordPrefix: "", EndOfWordSuffix: "",
			Vocab: vocab, Merges: mergeStrs,
		},
	}

	decoder := map[string]addedToken{}
	for _, a := range added {
		decoder[strconv.Itoa(a.ID)] = a
	}
	type addedDecoder struct {
		Content    string `json:"content"`
		LStrip     bool   `json:"lstrip"`
		Normalized bool   `json:"normalized"`
		RStrip     bool   `json:"rstrip"`
		SingleWord bool   `json:"single_word"`
		Special    bool   `json:"special"`
	}
	dec := map[string]addedDecoder{}
	for k, a := range decoder {
		dec[k] = addedDecoder{Content: a.Content, Special: true}
	}
	tokCfg := map[string]any{
		"add_bos_token":                false,
		"add_eos_token":                false,
		"added_tokens_decoder":         dec,
		"bos_token":                    "<|begin_of_text|>",
		"chat_template":                ChatTemplate,
		"clean_up_tokenization_spaces": false,
		"eos_token":                    "<|im_end|>",
		"model_max_length":             ContextLength,
		"pad_token":                    "<|endoftext|>",
		"tokenizer_class":              "PreTrainedTokenizerFast",
		"unk_token":                    nil,
	}
	config := map[string]any{
		"architectures":           []string{"DemoForCausalLM"},
		"bos_token_id":            ids["<|begin_of_text|>"],
		"eos_token_id":            ids["<|im_end|>"],
		"max_position_embeddings": ContextLength,
		"model_type":              "demo",
		"pad_token_id":            ids["<|endoftext|>"],
		"vocab_size":              VocabSize,
	}
	genCfg := map[string]any{
		"bos_token_id": ids["<|begin_of_text|>"],
		"eos_token_id": []int{ids["<|im_end|>"], ids["<|endoftext|>"]},
	}

	files := map[string][]byte{}
	for name, v := range map[string]any{
		"tokenizer.json":         tok,
		"tokenizer_config.json":  tokCfg,
		"config.json":            config,
		"generation_config.json": genCfg,
	} {
		b, err := marshal(v)
		if err != nil {
			return nil, fmt.Errorf("demomodel: %s: %w", name, err)
		}
		files[name] = b
	}
	return files, nil
}

type tokenizerJSON struct {
	Version       string         `json:"version"`
	Truncation    any            `json:"truncation"`
	Padding       any            `json:"padding"`
	AddedTokens   []addedToken   `json:"added_tokens"`
	Normalizer    any            `json:"normalizer"`
	PreTokenizer  map[string]any `json:"pre_tokenizer"`
	PostProcessor map[string]any `json:"post_processor"`
	Decoder       map[string]any `json:"decoder"`
	Model         bpeModel       `json:"model"`
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type bpeModel struct {
	Type                    string       `json:"type"`
	Dropout                 any          `json:"dropout"`
	UnkToken                any          `json:"unk_token"`
	ContinuingSubwordPrefix string       `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string       `json:"end_of_word_suffix"`
	FuseUnk                 bool         `json:"fuse_unk"`
	ByteFallback            bool         `json:"byte_fallback"`
	Vocab                   orderedVocab `json:"vocab"`
	Merges                  []string     `json:"merges"`
}

// orderedVocab encodes as {"token": id, ...} in id order, as the
// tokenizers library writes it.
type orderedVocab []string

func (v orderedVocab) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for id, tok := range v {
		if id > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(tok)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.WriteString(strconv.Itoa(id))
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// marshal is json.Marshal with two-space indentation, no HTML escaping and
// a final newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
