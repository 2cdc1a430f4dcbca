package modelcard

import (
	"context"
	"fmt"
)

// Files returns the model files the card names, each once, in a fixed
// order: tokenizer.json, tokenizer_config.json, config.json,
// generation_config.json, then the chat template's own file. Absent files
// are left out: a card built from the engine (FromEngine) names at most
// its chat template.
func (c *Card) Files() []*File {
	var out []*File
	for _, f := range []*File{c.TokenizerJSON, c.TokenizerConfigJSON, c.ConfigJSON, c.GenerationConfigJSON} {
		if f != nil {
			out = append(out, f)
		}
	}
	if c.ChatTemplate != nil && c.ChatTemplate.File != nil {
		out = append(out, c.ChatTemplate.File)
	}
	return out
}

// Size is the total size in bytes of the files the card names.
func (c *Card) Size() int64 {
	var n int64
	for _, f := range c.Files() {
		n += f.Size
	}
	return n
}

// Loaded reports whether every file the card names is loaded and the chat
// template, if any, is read: the card can build a pipeline.
func (c *Card) Loaded() bool {
	for _, f := range c.Files() {
		if !f.Loaded() {
			return false
		}
	}
	return c.ChatTemplate == nil || c.ChatTemplate.resolved()
}

// FetchFunc returns the contents of a model file; Load checks them.
type FetchFunc func(ctx context.Context, f *File) ([]byte, error)

// Load fetches every file that is not loaded yet with fetch, checks each
// against its size and checksum (a mismatch wraps ErrChecksum), attaches
// it, and then reads the chat template from its file. It stops at the
// first error; files loaded before it stay loaded, so Load can be called
// again. A card without tokenizer.json whose engine does not process both
// sides is refused (ErrMissingFile).
func (c *Card) Load(ctx context.Context, fetch FetchFunc) error {
	if err := c.checkTokenizer(); err != nil {
		return err
	}
	for _, f := range c.Files() {
		if f.Loaded() {
			continue
		}
		b, err := fetch(ctx, f)
		if err != nil {
			return fmt.Errorf("modelcard: load %s (%s): %w", f.Path, f.Checksum, err)
		}
		if err := f.SetContents(b); err != nil {
			return err
		}
	}
	if t := c.ChatTemplate; t != nil && !t.resolved() {
		if err := t.parse(c.TokenizerConfigJSON); err != nil {
			return err
		}
		if !t.resolved() {
			return fmt.Errorf("%w: card %q names a chat template from %s, but the file holds none", ErrInvalid, c.DisplayName, t.fileName())
		}
	}
	return nil
}
