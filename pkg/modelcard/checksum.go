package modelcard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Fields left out of the checksum: the checksum itself, and the runtime
// config, which describes one instance (its KV capacity may differ from its
// peers') rather than the model.
var unsummed = []string{"mdc_sum", "runtime_config"}

// Checksum returns the card's checksum, "sha256:<hex>": the SHA-256 of the
// card's canonical encoding. The checksum says what the model is (its
// files, chat template, names, context length, block size, ...), not how
// one worker serves it, so the cards of one model agree on it whatever
// each worker's role in disaggregated serving.
//
// The canonical encoding is the card as a JSON object without the
// "mdc_sum" and "runtime_config" members, with its role in its aggregated
// form (see roleNeutral: worker_type "Aggregated", and a model_type with
// the Prefill flag hashed as Chat | Completions, the types its decode
// peers serve), with the keys of every object sorted (byte order), no
// insignificant whitespace, strings escaped as encoding/json does without
// HTML escaping (only '"', '\\', control characters, U+2028 and U+2029 are
// escaped), and numbers as written. It covers unknown fields kept from a
// newer writer. It does not depend on the card's MDCSum field. The card of
// an aggregated worker hashes exactly as before roles were left out.
func (c *Card) Checksum() (string, error) {
	m, err := c.toMap()
	if err != nil {
		return "", err
	}
	return checksumOf(m)
}

// Marshal sets c.MDCSum and returns the card's JSON encoding (no HTML
// escaping, so templates stay readable). A card without tokenizer.json
// whose engine does not process both sides is refused (ErrMissingFile).
func (c *Card) Marshal() ([]byte, error) {
	if err := c.checkTokenizer(); err != nil {
		return nil, err
	}
	sum, err := c.Checksum()
	if err != nil {
		return nil, err
	}
	c.MDCSum = sum
	if len(c.extra) == 0 {
		return encode(c)
	}
	m, err := c.toMap()
	if err != nil {
		return nil, err
	}
	return encode(m)
}

// Unmarshal decodes a card and verifies it: the mdc_sum over the received
// JSON (so fields this version does not know are covered too) and each
// embedded file's checksum. A missing or wrong sum is an error wrapping
// ErrChecksum; malformed JSON wraps ErrInvalid; a card without
// tokenizer.json whose engine does not process both sides wraps
// ErrMissingFile. Unknown fields are kept.
func Unmarshal(b []byte) (*Card, error) {
	m, err := decodeObject(b)
	if err != nil {
		return nil, fmt.Errorf("%w: card: %w", ErrInvalid, err)
	}
	want, _ := m["mdc_sum"].(string)
	if want == "" {
		return nil, fmt.Errorf("%w: card has no mdc_sum", ErrChecksum)
	}
	got, err := checksumOf(m)
	if err != nil {
		return nil, err
	}
	if got != want {
		return nil, fmt.Errorf("%w: card %q has mdc_sum %s, contents hash to %s", ErrChecksum, m["display_name"], want, got)
	}
	var c Card
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: card: %w", ErrInvalid, err)
	}
	known := knownFields()
	for k, v := range m {
		if known[k] {
			continue
		}
		raw, err := encode(v)
		if err != nil {
			return nil, err
		}
		if c.extra == nil {
			c.extra = map[string]json.RawMessage{}
		}
		c.extra[k] = raw
	}
	if err := c.checkTokenizer(); err != nil {
		return nil, err
	}
	if err := c.verifyFiles(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Verify recomputes the checksum from the card's fields and compares it
// with MDCSum, and checks each embedded file's checksum. A mismatch wraps
// ErrChecksum; a card without tokenizer.json whose engine does not process
// both sides wraps ErrMissingFile.
func (c *Card) Verify() error {
	if err := c.checkTokenizer(); err != nil {
		return err
	}
	got, err := c.Checksum()
	if err != nil {
		return err
	}
	if got != c.MDCSum {
		return fmt.Errorf("%w: card %q has mdc_sum %s, contents hash to %s", ErrChecksum, c.DisplayName, c.MDCSum, got)
	}
	return c.verifyFiles()
}

func (c *Card) verifyFiles() error {
	for _, f := range []*File{c.TokenizerJSON, c.TokenizerConfigJSON, c.ConfigJSON, c.GenerationConfigJSON} {
		if err := f.Verify(); err != nil {
			return err
		}
	}
	return nil
}

// toMap returns the card as a generic JSON object, extra fields included.
func (c *Card) toMap() (map[string]any, error) {
	b, err := encode(c)
	if err != nil {
		return nil, err
	}
	m, err := decodeObject(b)
	if err != nil {
		return nil, err
	}
	for k, raw := range c.extra {
		if _, ok := m[k]; ok {
			continue
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: card field %s: %w", ErrInvalid, k, err)
		}
		m[k] = v
	}
	return m, nil
}

func checksumOf(m map[string]any) (string, error) {
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	for _, k := range unsummed {
		delete(cp, k)
	}
	if err := roleNeutral(cp); err != nil {
		return "", err
	}
	b, err := encode(cp) // encoding/json sorts map keys
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:]), nil
}

// roleNeutral rewrites, in a card's generic JSON object, the members that
// say what role its worker plays in disaggregated serving to what an
// aggregated worker of the model publishes: worker_type (when present)
// becomes "Aggregated", and a model_type with the Prefill flag loses it and
// gains Chat | Completions. Anything else is left as written, so the card
// of an aggregated worker is unchanged.
func roleNeutral(m map[string]any) error {
	if _, ok := m["worker_type"]; ok {
		m["worker_type"] = string(WorkerAggregated)
	}
	raw, ok := m["model_type"]
	if !ok {
		return nil
	}
	b, err := encode(raw)
	if err != nil {
		return err
	}
	var t ModelType
	if err := t.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("%w: card: %w", ErrInvalid, err)
	}
	if t.Has(ModelPrefill) {
		m["model_type"] = (t&^ModelPrefill | ModelChat | ModelCompletions).String()
	}
	return nil
}

func decodeObject(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the card")
	}
	return m, nil
}

// encode is json.Marshal without HTML escaping and without the trailing
// newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, fmt.Errorf("modelcard: encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

var knownFields = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Card]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
})
