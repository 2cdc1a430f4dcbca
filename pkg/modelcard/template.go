package modelcard

import "encoding/json"

// Chat template sources, in the order FromDir looks for them.
const (
	TemplateCustom          = "custom"                // Options.ChatTemplateFile
	TemplateJinja           = "chat_template.jinja"   // file in the model directory
	TemplateJSON            = "chat_template.json"    // {"chat_template": "..."}
	TemplateTokenizerConfig = "tokenizer_config.json" // its "chat_template" field
	// TemplateEngine is the template an engine reports (FromEngine), in
	// a chat_template.jinja File. The engine renders with it; the card
	// carries it for information.
	TemplateEngine = "engine"
)

// ChatTemplate is the model's resolved chat template: a single template
// (Template), or tokenizer_config.json's list of named templates
// (Templates) kept as is.
//
// In the card it is a reference: where the template came from (Source)
// and the file that holds it (File; for Source TemplateTokenizerConfig the
// card's tokenizer_config.json). Template and Templates are read from that
// file once it is loaded (Card.Load); they are not part of the card's JSON.
type ChatTemplate struct {
	// Source says where the template came from: one of the Template*
	// constants.
	Source string `json:"source"`
	// File is the template's own file: the custom template, chat_template.jinja
	// (also for TemplateEngine) or chat_template.json. Nil when Source is
	// TemplateTokenizerConfig.
	File *File `json:"file,omitempty"`
	// Template is the template text, when there is a single one.
	Template string `json:"-"`
	// Templates are the named templates ("default", "tool_use", "rag", ...)
	// when tokenizer_config.json has a list.
	Templates []NamedTemplate `json:"-"`
}

// UnmarshalJSON decodes the template reference. Cards of the previous
// format carried the text inline ("template" or "templates"); it is kept.
func (t *ChatTemplate) UnmarshalJSON(b []byte) error {
	var w struct {
		Source    string          `json:"source"`
		File      *File           `json:"file"`
		Template  string          `json:"template"`
		Templates []NamedTemplate `json:"templates"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = ChatTemplate{Source: w.Source, File: w.File, Template: w.Template, Templates: w.Templates}
	return nil
}

// resolved reports whether the template text is known.
func (t *ChatTemplate) resolved() bool { return t.Template != "" || len(t.Templates) > 0 }

// NamedTemplate is one entry of a list-form chat_template.
type NamedTemplate struct {
	Name     string `json:"name"`
	Template string `json:"template"`
}

// Named returns the templates by name, as the frontend registers them: a
// single template under both "default" and "tool_use", a list entry under
// its own name (the first entry wins for a repeated name).
func (t *ChatTemplate) Named() map[string]string {
	m := map[string]string{}
	if t == nil {
		return m
	}
	if t.Template != "" {
		m["default"] = t.Template
		m["tool_use"] = t.Template
	}
	for _, nt := range t.Templates {
		if _, ok := m[nt.Name]; !ok && nt.Name != "" {
			m[nt.Name] = nt.Template
		}
	}
	return m
}

// Select returns the template to render a request with: "tool_use" when
// the request has tools and such a template exists, else "default". It
// returns "" when the model has no usable template.
func (t *ChatTemplate) Select(hasTools bool) string {
	m := t.Named()
	if hasTools {
		if s, ok := m["tool_use"]; ok {
			return s
		}
	}
	return m["default"]
}
