package testgguf

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrUnsupported is wrapped by the errors for tokenizers this package
// cannot describe to llama.cpp so that it tokenizes as Hugging Face does.
var ErrUnsupported = errors.New("testgguf: unsupported tokenizer")

// Token types (gguf-py TokenType, llama_token_type).
const (
	tokenNormal      int32 = 1
	tokenControl     int32 = 3
	tokenUserDefined int32 = 4
	tokenUnused      int32 = 5
)

// noToken marks a special token the tokenizer does not have.
const noToken = -1

// vocab is what the GGUF's tokenizer.* keys say.
type vocab struct {
	tokens []string // in id order; holes are "[PAD{id}]"
	types  []int32
	merges []string // "left right", by rank
	pre    string   // tokenizer.ggml.pre

	bos, eos, pad, unk int // ids, or noToken
	addBOS, addEOS     bool
	chatTemplate       string
}

// tokenizerJSON is what loadVocab reads from tokenizer.json.
type tokenizerJSON struct {
	AddedTokens   []addedTokenJSON
	Normalizer    json.RawMessage
	PreTokenizer  json.RawMessage
	PostProcessor json.RawMessage
	Decoder       json.RawMessage
	Model         struct {
		Type                    string
		Vocab                   map[string]int
		Merges                  []string // "left right"; nil when absent
		IgnoreMerges            bool
		ByteFallback            bool
		ContinuingSubwordPrefix *string
		EndOfWordSuffix         *string
	}
}

type addedTokenJSON struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

type tokenizerConfigJSON struct {
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	PAD          json.RawMessage `json:"pad_token"`
	UNK          json.RawMessage `json:"unk_token"`
	AddBOS       *bool           `json:"add_bos_token"`
	AddEOS       *bool           `json:"add_eos_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// loadVocab converts a byte-level BPE tokenizer.json (and optionally its
// tokenizer_config.json) the way convert_hf_to_gguf.py does for GPT-2
// style vocabularies.
func loadVocab(tokJSON, cfgJSON []byte) (*vocab, error) {
	tj, err := parseTokenizerJSON(tokJSON)
	if err != nil {
		return nil, err
	}
	if err := checkModel(tj); err != nil {
		return nil, err
	}
	v := &vocab{bos: noToken, eos: noToken, pad: noToken, unk: noToken}
	if v.pre, err = choosePre(tj.PreTokenizer); err != nil {
		return nil, err
	}
	if tj.Model.IgnoreMerges != ignoresMerges(v.pre) {
		return nil, fmt.Errorf("%w: model.ignore_merges %v, but llama.cpp's %q pre-tokenizer uses %v",
			ErrUnsupported, tj.Model.IgnoreMerges, v.pre, ignoresMerges(v.pre))
	}
	if v.merges = tj.Model.Merges; len(v.merges) == 0 {
		return nil, fmt.Errorf("testgguf: tokenizer.json: no model.merges")
	}
	if err := v.fillTokens(tj); err != nil {
		return nil, err
	}

	var cfg tokenizerConfigJSON
	if len(cfgJSON) > 0 {
		if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
			return nil, fmt.Errorf("testgguf: tokenizer_config.json: %w", err)
		}
	}
	lookup := lookupToken(tj.AddedTokens, tj.Model.Vocab)
	for _, s := range []struct {
		name string
		raw  json.RawMessage
		id   *int
	}{{"bos_token", cfg.BOS, &v.bos}, {"eos_token", cfg.EOS, &v.eos}, {"pad_token", cfg.PAD, &v.pad}, {"unk_token", cfg.UNK, &v.unk}} {
		content, err := tokenContent(s.raw)
		if err != nil {
			return nil, fmt.Errorf("testgguf: tokenizer_config.json %s: %w", s.name, err)
		}
		if content == "" {
			continue
		}
		id, ok := lookup(content)
		if !ok {
			return nil, fmt.Errorf("testgguf: tokenizer_config.json %s %q is not in the vocabulary", s.name, content)
		}
		*s.id = id
	}
	if cfg.AddBOS != nil {
		v.addBOS = *cfg.AddBOS
	} else if v.bos != noToken {
		// Like gguf-py's SpecialVocab: a TemplateProcessing post-processor
		// that starts with the BOS token adds it (Llama 3).
		v.addBOS = templateStartsWith(tj.PostProcessor, v.tokens[v.bos])
	}
	if cfg.AddEOS != nil {
		v.addEOS = *cfg.AddEOS
	}
	if v.chatTemplate, err = chatTemplate(cfg.ChatTemplate); err != nil {
		return nil, err
	}
	return v, nil
}

// checkModel rejects what llama.cpp's "gpt2" (byte-level BPE) tokenizer
// would not reproduce.
func checkModel(tj *tokenizerJSON) error {
	m := &tj.Model
	if m.Type != "BPE" && (m.Type != "" || m.Merges == nil) {
		return fmt.Errorf("%w: model type %q (only BPE)", ErrUnsupported, m.Type)
	}
	if len(m.Vocab) == 0 {
		return fmt.Errorf("testgguf: tokenizer.json: empty model.vocab")
	}
	if m.ByteFallback {
		return fmt.Errorf("%w: BPE byte_fallback", ErrUnsupported)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return fmt.Errorf("%w: BPE continuing_subword_prefix %q", ErrUnsupported, *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return fmt.Errorf("%w: BPE end_of_word_suffix %q", ErrUnsupported, *m.EndOfWordSuffix)
	}
	if typ := jsonType(tj.Normalizer); typ != "" && typ != "NFC" {
		// NFC is accepted: llama.cpp does not normalize, which only
		// matters for text that is not already NFC.
		return fmt.Errorf("%w: normalizer %q (only none or NFC)", ErrUnsupported, typ)
	}
	if typ := jsonType(tj.Decoder); typ != "" && typ != "ByteLevel" {
		return fmt.Errorf("%w: decoder %q (only ByteLevel)", ErrUnsupported, typ)
	}
	return nil
}

// jsonType returns the "type" of a JSON object, "" for null or absent.
func jsonType(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &t); err != nil || t.Type == "" {
		return "?"
	}
	return t.Type
}

// fillTokens lays out the token list by id: the model vocabulary
// (NORMAL), added tokens (CONTROL when special, else USER_DEFINED; their
// content as written, which llama.cpp matches against raw text) and
// "[PAD{id}]" UNUSED tokens in the holes. Token strings must be unique
// (llama.cpp asserts it); the vocabulary's keys are (parseModel checks).
func (v *vocab) fillTokens(tj *tokenizerJSON) error {
	n := 0
	for tok, id := range tj.Model.Vocab {
		if id < 0 {
			return fmt.Errorf("testgguf: tokenizer.json: token %q has id %d", tok, id)
		}
		n = max(n, id+1)
	}
	for _, a := range tj.AddedTokens {
		if a.ID < 0 {
			return fmt.Errorf("testgguf: tokenizer.json: added token %q has id %d", a.Content, a.ID)
		}
		n = max(n, a.ID+1)
	}
	v.tokens = make([]string, n)
	v.types = make([]int32, n)
	for tok, id := range tj.Model.Vocab {
		if v.types[id] != 0 {
			return fmt.Errorf("testgguf: tokenizer.json: id %d is both %q and %q", id, v.tokens[id], tok)
		}
		v.tokens[id], v.types[id] = tok, tokenNormal
	}
	// Strings not from the vocabulary's keys, by the id holding them.
	other := map[string]int{}
	unique := func(s string, id int) error {
		prev, ok := other[s]
		if !ok {
			prev, ok = tj.Model.Vocab[s]
		}
		if ok && prev != id {
			return fmt.Errorf("%w: ids %d and %d are both %q", ErrUnsupported, min(prev, id), max(prev, id), s)
		}
		other[s] = id
		return nil
	}
	for _, a := range tj.AddedTokens {
		if a.Content == "" {
			return fmt.Errorf("testgguf: tokenizer.json: added token %d is empty", a.ID)
		}
		if old := v.tokens[a.ID]; v.types[a.ID] == tokenNormal && old != a.Content {
			delete(tj.Model.Vocab, old) // the added token replaces it
		}
		if err := unique(a.Content, a.ID); err != nil {
			return err
		}
		v.tokens[a.ID] = a.Content
		v.types[a.ID] = tokenUserDefined
		if a.Special {
			v.types[a.ID] = tokenControl
		}
	}
	for id := range v.tokens {
		if v.types[id] == 0 {
			v.tokens[id], v.types[id] = fmt.Sprintf("[PAD%d]", id), tokenUnused
			if err := unique(v.tokens[id], id); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookupToken finds a token by its text: added tokens first (as gguf-py
// does), then the model vocabulary.
func lookupToken(added []addedTokenJSON, model map[string]int) func(string) (int, bool) {
	return func(s string) (int, bool) {
		for _, a := range added {
			if a.Content == s {
				return a.ID, true
			}
		}
		id, ok := model[s]
		return id, ok
	}
}

// tokenContent reads a tokenizer_config token: a string, an object with
// "content", or null ("" then).
func tokenContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var o struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", fmt.Errorf("neither a string nor {content}: %w", err)
	}
	return o.Content, nil
}

// templateStartsWith reports whether a TemplateProcessing post-processor
// (alone or in a Sequence) puts the special token first in a single
// sequence.
func templateStartsWith(raw json.RawMessage, token string) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	type piece struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
	}
	type proc struct {
		Type       string  `json:"type"`
		Single     []piece `json:"single"`
		Processors []proc  `json:"processors"`
	}
	var p proc
	if err := json.Unmarshal(raw, &p); err != nil {
		return false
	}
	procs := p.Processors
	if p.Type != "Sequence" {
		procs = []proc{p}
	}
	for _, q := range procs {
		if q.Type == "TemplateProcessing" && len(q.Single) > 1 && q.Single[0].SpecialToken != nil {
			return q.Single[0].SpecialToken.ID == token
		}
	}
	return false
}

// chatTemplate reads tokenizer_config's chat_template: a string, or a
// list of {name, template} from which the "default" one is taken.
func chatTemplate(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", fmt.Errorf("testgguf: tokenizer_config.json chat_template: %w", err)
	}
	for _, t := range named {
		if t.Name == "default" {
			return t.Template, nil
		}
	}
	return "", fmt.Errorf("testgguf: tokenizer_config.json chat_template: no template named \"default\"")
}
