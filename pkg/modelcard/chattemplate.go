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
// templates kept as is). It returns nil when there is none. tokCfg is the
// loaded tokenizer_config.json, or nil.
func resolveTemplate(dir, custom string, tokCfg *File) (*ChatTemplate, error) {
	if custom != "" {
		b, err := os.ReadFile(custom)
		if err != nil {
			return nil, fmt.Errorf("modelcard: custom chat template: %w", err)
		}
		return fileTemplate(TemplateCustom, filepath.Base(custom), b, tokCfg)
	}
	for _, c := range []struct{ source, name string }{
		{TemplateJinja, FileChatTemplate},
		{TemplateJSON, FileChatTemplateJSON},
	} {
		b, err := os.ReadFile(filepath.Join(dir, c.name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("modelcard: read %s: %w", c.name, err)
		}
		t, err := fileTemplate(c.source, c.name, b, tokCfg)
		if t != nil || err != nil {
			return t, err
		}
	}
	t := &ChatTemplate{Source: TemplateTokenizerConfig}
	if err := t.parse(tokCfg); err != nil || !t.resolved() {
		return nil, err
	}
	return t, nil
}

// fileTemplate is the template held by file name with contents b; nil
// when the file holds none (a chat_template.json whose template is null).
func fileTemplate(source, name string, b []byte, tokCfg *File) (*ChatTemplate, error) {
	f, err := NewFile(name, b)
	if err != nil {
		return nil, fmt.Errorf("%w: chat template %s is not valid UTF-8", ErrInvalid, name)
	}
	t := &ChatTemplate{Source: source, File: f}
	if err := t.parse(tokCfg); err != nil {
		return nil, err
	}
	if !t.resolved() {
		return nil, nil
	}
	return t, nil
}

// parse reads the template text from its loaded file (or from tokCfg, the
// loaded tokenizer_config.json, when Source is TemplateTokenizerConfig).
func (t *ChatTemplate) parse(tokCfg *File) error {
	switch t.Source {
	case TemplateCustom, TemplateJinja, TemplateEngine:
		b := t.File.Bytes()
		if !utf8.Valid(b) {
			return fmt.Errorf("%w: chat template %s is not valid UTF-8", ErrInvalid, t.File.Path)
		}
		if len(b) == 0 {
			return fmt.Errorf("%w: chat template %s is empty", ErrInvalid, t.fileName())
		}
		t.Template = string(b)
		return nil
	case TemplateJSON:
		return t.parseField(t.File)
	case TemplateTokenizerConfig:
		return t.parseField(tokCfg)
	default:
		return fmt.Errorf("%w: chat template source %q is unknown", ErrInvalid, t.Source)
	}
}

func (t *ChatTemplate) fileName() string {
	if t.File == nil {
		return t.Source
	}
	return t.File.Path
}

// parseField reads the "chat_template" member of a JSON file: a string, or
// a list of {"name", "template"}; null, absent or "" is no template.
func (t *ChatTemplate) parseField(f *File) error {
	if f == nil {
		return nil
	}
	var v struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(f.Bytes(), &v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, f.Path, err)
	}
	raw := v.ChatTemplate
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t.Template = s
		return nil
	}
	var list []NamedTemplate
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("%w: %s chat_template is neither a string nor a list of {name, template}: %w", ErrInvalid, t.Source, err)
	}
	usable := 0
	for _, nt := range list {
		if nt.Name != "" && nt.Template != "" {
			usable++
		}
	}
	if usable == 0 {
		return fmt.Errorf("%w: %s chat_template list has no entry with both a name and a template", ErrInvalid, t.Source)
	}
	t.Templates = list
	return nil
}
