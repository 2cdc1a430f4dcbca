package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// ResponsesRequest is the body of POST /v1/responses (the OpenAI
// Responses API). The frontend serves it as a chat completions request:
// ToChat translates it. Fields the translation does not read are kept as
// raw JSON so that the response can echo them.
type ResponsesRequest struct {
	Model string `json:"model"`
	// Input is a string (one user message) or a list of input items:
	// messages, function_call and function_call_output items.
	Input json.RawMessage `json:"input"`
	// Instructions becomes a leading system message.
	Instructions *string `json:"instructions,omitempty"`
	// Tools are function tools in the Responses shape (flat: type, name,
	// description, parameters, strict).
	Tools []json.RawMessage `json:"tools,omitempty"`
	// ToolChoice is "none", "auto", "required" or {"type":"function","name":...}.
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	MaxOutputTokens   *int64          `json:"max_output_tokens,omitempty"`
	Temperature       *float64        `json:"temperature,omitempty"`
	TopP              *float64        `json:"top_p,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// Text is {"format":{"type":"text"|"json_object"|"json_schema",...}};
	// a JSON format becomes the chat request's response_format.
	Text json.RawMessage `json:"text,omitempty"`
	User string          `json:"user,omitempty"`
	// NvExt carries over to the chat request: its annotations
	// (formatted_prompt, ...) are events of the stream, before
	// response.created, as on chat streams.
	NvExt *NvExt `json:"nvext,omitempty"`

	// Store asks for the response to be kept (GET /v1/responses/{id},
	// a later previous_response_id); nil means true, as OpenAI's
	// default is. The frontend decides what it can do.
	Store *bool `json:"store,omitempty"`
	// PreviousResponseID continues the conversation of a stored
	// response: the frontend prepends its input and output items.
	PreviousResponseID *string `json:"previous_response_id,omitempty"`
	// Background runs the request after the answer: the response is
	// returned queued and polled with GET. It needs Store.
	Background *bool `json:"background,omitempty"`

	// Accepted and ignored: truncation is never done, reasoning effort
	// is the model's own, and logprobs are not returned.
	Metadata             json.RawMessage `json:"metadata,omitempty"`
	Truncation           json.RawMessage `json:"truncation,omitempty"`
	Reasoning            json.RawMessage `json:"reasoning,omitempty"`
	ServiceTier          json.RawMessage `json:"service_tier,omitempty"`
	SafetyIdentifier     json.RawMessage `json:"safety_identifier,omitempty"`
	PromptCacheKey       json.RawMessage `json:"prompt_cache_key,omitempty"`
	PromptCacheRetention json.RawMessage `json:"prompt_cache_retention,omitempty"`
	Include              json.RawMessage `json:"include,omitempty"`
	StreamOptions        json.RawMessage `json:"stream_options,omitempty"`
	TopLogprobs          json.RawMessage `json:"top_logprobs,omitempty"`
	MaxToolCalls         json.RawMessage `json:"max_tool_calls,omitempty"`

	// Refused when set: they need conversations or prompts to be
	// stored, or work the frontend does not do.
	Conversation      json.RawMessage `json:"conversation,omitempty"`
	Prompt            json.RawMessage `json:"prompt,omitempty"`
	ContextManagement json.RawMessage `json:"context_management,omitempty"`
}

var responsesInfo = sync.OnceValue(func() *typeInfo { return newTypeInfo(reflect.TypeFor[ResponsesRequest]()) })

// DecodeResponses decodes and validates a Responses API body and
// translates it into the chat completions request the frontend runs.
// Every failure is a *ValidationError naming the field at fault.
func DecodeResponses(body []byte, opts DecodeOptions) (*ResponsesRequest, *ChatCompletionRequest, error) {
	r, err := DecodeResponsesRequest(body, opts)
	if err != nil {
		return nil, nil, err
	}
	chat, err := r.ToChat()
	if err != nil {
		return nil, nil, err
	}
	return r, chat, nil
}

// DecodeResponsesRequest decodes and validates a Responses API body
// without translating it: the frontend first prepends the stored
// conversation of previous_response_id (PrependInput), then calls ToChat.
func DecodeResponsesRequest(body []byte, opts DecodeOptions) (*ResponsesRequest, error) {
	var r ResponsesRequest
	if err := decodeObject(body, opts, responsesInfo(), &r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Validate checks the request's scalar fields and refuses the features
// that need stored conversations or prompts. Input items and tools are
// checked by ToChat; whether store, previous_response_id and background
// can be served is the frontend's to say.
func (r *ResponsesRequest) Validate() error {
	if r.PreviousResponseID != nil && *r.PreviousResponseID == "" {
		return invalidParam("previous_response_id", "previous_response_id must not be empty")
	}
	if present(r.Conversation) {
		return invalidParam("conversation", "conversation is not supported: this server does not store conversations; send the whole conversation in `input`")
	}
	if present(r.Prompt) {
		return invalidParam("prompt", "prompt (a stored prompt template) is not supported")
	}
	if present(r.ContextManagement) {
		return invalidParam("context_management", "context_management is not supported")
	}
	if r.Background != nil && *r.Background && r.Store != nil && !*r.Store {
		return invalidParam("background", "background responses need store: a background response is polled with GET /v1/responses/{id}")
	}
	if strings.TrimSpace(r.Model) == "" {
		return invalidParam("model", "model must not be empty")
	}
	if !present(r.Input) {
		return invalidParam("input", "input is required")
	}
	if err := checkRange("temperature", r.Temperature, 0, 2); err != nil {
		return err
	}
	if err := checkRange("top_p", r.TopP, 0, 1); err != nil {
		return err
	}
	return checkMaxTokens("max_output_tokens", r.MaxOutputTokens)
}

// inputItem is one element of a list input, with the fields of every item
// type the translation accepts.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// inputPart is one element of a message item's content list.
type inputPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

// inputRoles are the roles a message input item may have.
var inputRoles = []string{"user", "system", "developer", "assistant"}

// ToChat translates the request into a chat completions request:
// instructions → a leading system message; a string input → one user
// message; message items → messages; function_call items → an assistant
// message's tool_calls (consecutive calls, and a call right after an
// assistant message, share one message); function_call_output items →
// tool messages; reasoning items (a previous answer's, sent back) are
// dropped. Function tools, tool_choice, max_output_tokens, temperature,
// top_p, parallel_tool_calls, user and a JSON text.format carry over.
// Usage is always asked for: every answer reports it.
func (r *ResponsesRequest) ToChat() (*ChatCompletionRequest, error) {
	chat := &ChatCompletionRequest{
		Model:             r.Model,
		Stream:            r.Stream,
		MaxTokens:         r.MaxOutputTokens,
		Temperature:       r.Temperature,
		TopP:              r.TopP,
		ParallelToolCalls: r.ParallelToolCalls,
		User:              r.User,
	}
	chat.NvExt = r.NvExt
	if r.Stream {
		chat.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	if r.Instructions != nil {
		chat.Messages = append(chat.Messages, textMessage("system", *r.Instructions))
	}
	msgs, err := inputMessages(r.Input)
	if err != nil {
		return nil, err
	}
	chat.Messages = append(chat.Messages, msgs...)
	if chat.Tools, err = chatTools(r.Tools); err != nil {
		return nil, err
	}
	if chat.ToolChoiceRaw, err = chatToolChoice(r.ToolChoice); err != nil {
		return nil, err
	}
	if chat.ResponseFormat, err = chatResponseFormat(r.Text); err != nil {
		return nil, err
	}
	if err := chat.Validate(); err != nil {
		return nil, err
	}
	return chat, nil
}

// textMessage is a message with string content.
func textMessage(role, text string) Message {
	return Message{Role: role, Content: Content{Text: &text}}
}

// inputMessages translates input, a string or a list of items.
func inputMessages(input json.RawMessage) ([]Message, error) {
	var s string
	if json.Unmarshal(input, &s) == nil {
		return []Message{textMessage("user", s)}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, invalidParam("input", "input must be a string or a list of input items")
	}
	if len(items) == 0 {
		return nil, invalidParam("input", "input must not be an empty list")
	}
	var out []Message
	for i, raw := range items {
		param := fmt.Sprintf("input[%d]", i)
		var it inputItem
		if err := json.Unmarshal(raw, &it); err != nil || !isObject(raw) {
			return nil, invalidParam(param, "%s must be an input item object", param)
		}
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			m, err := messageItem(param, it)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Arguments == nil {
				return nil, invalidParam(param, "%s: a function_call item needs call_id, name and arguments", param)
			}
			args, _ := json.Marshal(*it.Arguments)
			call := ToolCall{ID: it.CallID, Type: "function", Function: FunctionCall{Name: it.Name, Arguments: args}}
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
				continue
			}
			// Content "" rather than null: templates that concatenate
			// the content fail on null.
			m := textMessage("assistant", "")
			m.ToolCalls = []ToolCall{call}
			out = append(out, m)
		case "function_call_output":
			if it.CallID == "" {
				return nil, invalidParam(param+".call_id", "%s: a function_call_output item needs call_id", param)
			}
			text, err := contentText(param+".output", it.Output)
			if err != nil {
				return nil, err
			}
			m := textMessage("tool", text)
			m.ToolCallID = it.CallID
			out = append(out, m)
		case "reasoning":
			// A previous answer's reasoning, sent back with its output:
			// chat templates drop past reasoning, and so does this.
		case "":
			return nil, invalidParam(param+".type", "%s: type (or role) is required", param)
		case "item_reference":
			return nil, invalidParam(param+".type", "%s: item_reference is not supported: this server does not store items", param)
		default:
			return nil, invalidParam(param+".type", "%s: input item type `%s` is not supported; supported: `message`, `function_call`, `function_call_output`, `reasoning`", param, typ)
		}
	}
	return out, nil
}

// messageItem translates a message input item.
func messageItem(param string, it inputItem) (Message, error) {
	found := false
	for _, r := range inputRoles {
		found = found || r == it.Role
	}
	if !found {
		return Message{}, invalidParam(param+".role", "%s: unknown role `%s`, expected one of %s", param, it.Role, quoteList(inputRoles))
	}
	text, err := contentText(param+".content", it.Content)
	if err != nil {
		return Message{}, err
	}
	return textMessage(it.Role, text), nil
}

// contentText reads a content given as a string or a list of text parts
// (input_text, output_text), joining the parts' texts.
func contentText(param string, raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", invalidParam(param, "%s is required", param)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalidParam(param, "%s must be a string or a list of content parts", param)
	}
	var b strings.Builder
	for j, pr := range parts {
		var p inputPart
		pp := fmt.Sprintf("%s[%d]", param, j)
		if err := json.Unmarshal(pr, &p); err != nil || !isObject(pr) {
			return "", invalidParam(pp, "%s must be a content part object", pp)
		}
		switch p.Type {
		case "input_text", "output_text", "text":
			if p.Text == nil {
				return "", invalidParam(pp+".text", "%s: a %s part needs text", pp, p.Type)
			}
			b.WriteString(*p.Text)
		default:
			return "", invalidParam(pp+".type", "%s: content part type `%s` is not supported; only text parts (`input_text`, `output_text`) are", pp, p.Type)
		}
	}
	return b.String(), nil
}

// responsesTool is a function tool in the Responses shape.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// chatTools translates function tools into chat tools; every other tool
// type (web_search, file_search, ...) is refused.
func chatTools(tools []json.RawMessage) ([]Tool, error) {
	var out []Tool
	for i, raw := range tools {
		param := fmt.Sprintf("tools[%d]", i)
		var t responsesTool
		if err := json.Unmarshal(raw, &t); err != nil || !isObject(raw) {
			return nil, invalidParam(param, "%s must be a tool object", param)
		}
		if t.Type != "function" {
			return nil, invalidParam(param+".type", "%s: tool type `%s` is not supported; only `function` tools are", param, t.Type)
		}
		if t.Name == "" {
			return nil, invalidParam(param+".name", "%s: a function tool needs a name", param)
		}
		params := t.Parameters
		if !present(params) {
			params = nil
		}
		out = append(out, Tool{Type: "function", Function: FunctionDef{Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict}})
	}
	return out, nil
}

// chatToolChoice translates tool_choice: the modes carry over, a named
// function becomes the chat shape {"type":"function","function":{"name":...}}.
func chatToolChoice(raw json.RawMessage) (json.RawMessage, error) {
	if !present(raw) {
		return nil, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none", "auto", "required":
			return raw, nil
		}
		return nil, invalidParam("tool_choice", "tool_choice `%s` is not supported; expected `none`, `auto`, `required` or {\"type\":\"function\",\"name\":...}", mode)
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || !isObject(raw) {
		return nil, invalidParam("tool_choice", "tool_choice must be a string or an object")
	}
	if named.Type != "function" || named.Name == "" {
		return nil, invalidParam("tool_choice", "tool_choice of type `%s` is not supported; expected {\"type\":\"function\",\"name\":...}", named.Type)
	}
	type fn struct {
		Name string `json:"name"`
	}
	b, err := json.Marshal(struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{"function", fn{named.Name}})
	return b, err
}

// chatResponseFormat translates text.format: "text" is the default, a
// JSON object or JSON schema format becomes response_format.
func chatResponseFormat(raw json.RawMessage) (*ResponseFormat, error) {
	if !present(raw) {
		return nil, nil
	}
	var text struct {
		Format *struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"format"`
	}
	if err := json.Unmarshal(raw, &text); err != nil || !isObject(raw) {
		return nil, invalidParam("text", "text must be an object")
	}
	f := text.Format
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &ResponseFormat{Type: "json_object"}, nil
	case "json_schema":
		if f.Name == "" {
			return nil, invalidParam("text.format.name", "text.format: a json_schema format needs a name")
		}
		if !present(f.Schema) || bytes.Equal(bytes.TrimSpace(f.Schema), []byte("false")) {
			return nil, invalidParam("text.format.schema", "text.format: a json_schema format needs a schema")
		}
		return &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaSpec{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}}, nil
	}
	return nil, invalidParam("text.format.type", "text.format type `%s` is not supported; expected `text`, `json_object` or `json_schema`", f.Type)
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}
