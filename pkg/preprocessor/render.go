package preprocessor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/internal/jsonscan"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/template"
)

// RenderChat renders the model's chat template for req: the prompt text,
// before tokenization. The context follows transformers'
// apply_chat_template: the special-token strings, messages (text-part
// arrays joined with "\n", tool-call arguments given as JSON strings
// parsed into mappings), tools (when given and tool_choice is not "none"),
// documents, add_generation_prompt, and chat_template_kwargs merged last.
// continue_final_message cuts the rendered prompt after the final
// message's text, as transformers does.
func (m *Model) RenderChat(req *openai.ChatCompletionRequest) (string, error) {
	if len(m.templates) == 0 {
		return "", invalid("model %q has no chat template; use /v1/completions", m.card.DisplayName)
	}
	cont := req.ContinueFinalMessage != nil && *req.ContinueFinalMessage
	addGen := !cont
	if req.AddGenerationPrompt != nil {
		addGen = *req.AddGenerationPrompt
	}
	if cont && addGen {
		return "", invalid("continue_final_message and add_generation_prompt cannot both be true")
	}
	ctx := template.NewOrderedMap()
	for _, s := range m.special {
		ctx.Set(s.key, s.val)
	}
	msgs, err := templateMessages(req.Messages)
	if err != nil {
		return "", err
	}
	ctx.Set("messages", msgs)
	tools, err := templateTools(req)
	if err != nil {
		return "", err
	}
	if tools != nil {
		ctx.Set("tools", tools)
	}
	if len(req.Documents) > 0 && string(req.Documents) != "null" {
		docs, err := template.DecodeJSON(req.Documents)
		if err != nil {
			return "", invalid("documents: %v", err)
		}
		ctx.Set("documents", docs)
	}
	ctx.Set("add_generation_prompt", addGen)
	for _, raw := range []json.RawMessage{req.ChatTemplateArgs, req.ChatTemplateKwargs} {
		if err := mergeKwargs(ctx, raw); err != nil {
			return "", err
		}
	}
	name := "default"
	if tools != nil {
		if _, ok := m.templates["tool_use"]; ok {
			name = "tool_use"
		}
	}
	t := m.templates[name]
	if t == nil {
		return "", invalid("model %q has no %q chat template", m.card.DisplayName, name)
	}
	out, err := t.Render(ctx)
	if err != nil {
		return "", templateError(err)
	}
	if cont {
		return continueFinal(out, req.Messages[len(req.Messages)-1])
	}
	return out, nil
}

// templateError turns a render failure into the error the client sees: a
// raise_exception message (the template refusing the conversation, e.g.
// roles that do not alternate) or any other failure caused by the
// request's shape is a 400.
func templateError(err error) error {
	msg := err.Error()
	if errors.Is(err, template.ErrRaised) {
		msg = strings.TrimPrefix(msg, template.ErrRaised.Error()+": ")
	}
	return &openai.ValidationError{Message: "chat template error: " + msg}
}

// templateMessages converts the request messages into template values,
// keeping every key the client sent, in order.
func templateMessages(in []openai.Message) ([]any, error) {
	out := make([]any, len(in))
	for i, msg := range in {
		raw := msg.Raw
		if len(raw) == 0 {
			b, err := json.Marshal(msg)
			if err != nil {
				return nil, fmt.Errorf("preprocessor: message %d: %w", i, err)
			}
			raw = b
		}
		texts, textOnly := msg.Content.TextOnly()
		str := msg.Content.Text
		obj, err := decodeMessage(raw, textOnly || str != nil)
		if err != nil {
			return nil, invalid("messages[%d]: %v", i, err)
		}
		switch {
		case textOnly:
			obj.Set("content", strings.Join(texts, "\n"))
		case str != nil:
			obj.Set("content", *str)
		}
		parseToolArguments(obj)
		out[i] = obj
	}
	return out, nil
}

// decodeMessage decodes a message's JSON object into template values, in
// its key order. With skipContent its "content" is left undecoded (nil,
// in its place): the caller sets it from the decoded request, and in a
// long conversation the contents are most of the bytes.
func decodeMessage(raw []byte, skipContent bool) (*template.OrderedMap, error) {
	r := jsonscan.New(raw)
	if r.Peek() != '{' {
		return nil, errors.New("not an object")
	}
	obj := template.NewOrderedMap()
	err := r.Object(func(key string) error {
		v, err := r.Skip()
		if err != nil {
			return err
		}
		if skipContent && key == "content" {
			obj.Set(key, nil)
			return nil
		}
		val, err := template.DecodeJSON(v)
		if err != nil {
			return err
		}
		obj.Set(key, val)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if r.Peek() != 0 {
		return nil, errors.New("trailing data after the object")
	}
	return obj, nil
}

// parseToolArguments replaces tool_calls[].function.arguments given as a
// JSON string by the decoded mapping: templates iterate
// arguments|items. A string that is not a JSON object stays a string.
func parseToolArguments(msg *template.OrderedMap) {
	calls, _ := msg.Get("tool_calls")
	list, _ := calls.([]any)
	for _, c := range list {
		call, _ := c.(*template.OrderedMap)
		if call == nil {
			continue
		}
		fn, _ := call.Get("function")
		f, _ := fn.(*template.OrderedMap)
		if f == nil {
			continue
		}
		a, _ := f.Get("arguments")
		s, ok := a.(string)
		if !ok {
			continue
		}
		if v, err := template.DecodeJSON([]byte(s)); err == nil {
			if obj, ok := v.(*template.OrderedMap); ok {
				f.Set("arguments", obj)
			}
		}
	}
}

// templateTools returns the tools as template values, or nil when there
// are none or tool_choice is "none". Tools without parameters get an empty
// object schema.
func templateTools(req *openai.ChatCompletionRequest) ([]any, error) {
	if len(req.Tools) == 0 || req.ToolChoiceNone() {
		return nil, nil
	}
	out := make([]any, len(req.Tools))
	for i, tool := range req.Tools {
		raw := tool.Raw
		if len(raw) == 0 {
			b, err := json.Marshal(tool)
			if err != nil {
				return nil, fmt.Errorf("preprocessor: tool %d: %w", i, err)
			}
			raw = b
		}
		v, err := template.DecodeJSON(raw)
		if err != nil {
			return nil, invalid("tools[%d]: %v", i, err)
		}
		obj, ok := v.(*template.OrderedMap)
		if !ok {
			return nil, invalid("tools[%d] is not an object", i)
		}
		if fn, _ := obj.Get("function"); fn != nil {
			if f, ok := fn.(*template.OrderedMap); ok {
				if p, _ := f.Get("parameters"); isEmptySchema(p) {
					schema := template.NewOrderedMap()
					schema.Set("type", "object")
					schema.Set("properties", template.NewOrderedMap())
					f.Set("parameters", schema)
				}
			}
		}
		out[i] = obj
	}
	return out, nil
}

func isEmptySchema(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case *template.OrderedMap:
		return x.Len() == 0
	}
	return false
}

// mergeKwargs sets every key of the JSON object raw in ctx, overriding.
func mergeKwargs(ctx *template.OrderedMap, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	v, err := template.DecodeJSON(raw)
	if err != nil {
		return invalid("chat_template_kwargs: %v", err)
	}
	obj, ok := v.(*template.OrderedMap)
	if !ok {
		return invalid("chat_template_kwargs must be a JSON object")
	}
	for _, k := range obj.Keys() {
		val, _ := obj.Get(k)
		ctx.Set(k, val)
	}
	return nil
}

// continueFinal cuts the rendered prompt right after the final message's
// text, so generation continues it (transformers' continue_final_message).
func continueFinal(rendered string, last openai.Message) (string, error) {
	var final string
	switch {
	case last.Content.Text != nil:
		final = *last.Content.Text
	case last.Content.Parts != nil:
		found := false
		for i := len(last.Content.Parts) - 1; i >= 0; i-- {
			if p := last.Content.Parts[i]; p.Text != nil {
				final, found = *p.Text, true
				break
			}
		}
		if !found {
			return "", invalid("continue_final_message: the final message has no text part")
		}
	}
	if texts, ok := last.Content.TextOnly(); ok {
		final = strings.Join(texts, "\n")
	}
	trimmed := strings.TrimSpace(final)
	if trimmed == "" {
		return rendered, nil // Python: "" is in every string, at its end
	}
	loc := strings.LastIndex(rendered, trimmed)
	if loc < 0 {
		return "", invalid("continue_final_message is set but the final message does not appear in the rendered chat")
	}
	left := strings.TrimLeft(final, " \t\n\r\v\f")
	if loc+len(left) <= len(rendered) && rendered[loc:loc+len(left)] == final {
		return rendered[:loc+len(left)], nil
	}
	return rendered[:loc+len(trimmed)], nil
}

// invalid returns a 400 error with a formatted message.
func invalid(format string, args ...any) error {
	return &openai.ValidationError{Message: fmt.Sprintf(format, args...)}
}

// invalidParam is invalid for an error in the request field param
// ("prompt", "messages").
func invalidParam(param, format string, args ...any) error {
	return &openai.ValidationError{Message: fmt.Sprintf(format, args...), Param: param}
}
