package modelcard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// resolveTemplate finds the chat template, in the reference system's order:
// a custom file, chat_template.jinja, chat_template.json, then
// tokenizer_config.json's chat_template (a string, or a list of named
// templates kept as is). It returns nil when there is none.
func resolveTemplate(dir, custom string, tok tokenizerConfig) (*ChatTemplate, error) {
	if custom != "" {
		b, err := os.ReadFile(custom)
		if err != nil {
			return nil, fmt.Errorf("modelcard: custom chat template: %w", err)
		}
		return textTemplate(TemplateCustom, custom, b)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileChatTemplate))
	switch {
	case err == nil:
		return textTemplate(TemplateJinja, FileChatTemplate, b)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("modelcard: read %s: %w", FileChatTemplate, err)
	}
	b, err = os.ReadFile(filepath.Join(dir, FileChatTemplateJSON))
	switch {
	case err == nil:
		var ct struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &ct); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, FileChatTemplateJSON, err)
		}
		if t, err := fieldTemplate(TemplateJSON, ct.ChatTemplate); t != nil || err != nil {
			return t, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("modelcard: read %s: %w", FileChatTemplateJSON, err)
	}
	return fieldTemplate(TemplateTokenizerConfig, tok.ChatTemplate)
}

func textTemplate(source, path string, b []byte) (*ChatTemplate, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: chat template %s is not valid UTF-8", ErrInvalid, path)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: chat template %s is empty", ErrInvalid, path)
	}
	return &ChatTemplate{Source: source, Template: string(b)}, nil
}

// fieldTemplate reads a "chat_template" JSON value: a string, or a list of
// {"name", "template"}; null, absent or "" is no template.
func fieldTemplate(source string, raw json.RawMessage) (*ChatTemplate, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return &ChatTemplate{Source: source, Template: s}, nil
	}
	var list []NamedTemplate
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%w: %s chat_template is neither a string nor a list of {name, template}: %w", ErrInvalid, source, err)
	}
	usable := 0
	for _, nt := range list {
		if nt.Name != "" && nt.Template != "" {
			usable++
		}
	}
	if usable == 0 {
		return nil, fmt.Errorf("%w: %s chat_template list has no entry with both a name and a template", ErrInvalid, source)
	}
	return &ChatTemplate{Source: source, Templates: list}, nil
}
