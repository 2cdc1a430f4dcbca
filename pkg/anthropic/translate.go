package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// toChat translates the request into a chat completions request: system
// → a leading system message; each turn → chat messages (messages.go);
// tools, tool_choice, stop_sequences, max_tokens, temperature, top_p,
// top_k, metadata.user_id and thinking carry over. A conversation that
// ends with an assistant turn is continued (continue_final_message), as
// Anthropic continues a prefilled answer.
func (r *Request) toChat() (*openai.ChatCompletionRequest, error) {
	chat := &openai.ChatCompletionRequest{
		Model:       r.Model,
		Stream:      r.Stream,
		MaxTokens:   r.MaxTokens,
		Temperature: r.Temperature,
		TopP:        r.TopP,
	}
	chat.TopK = r.TopK
	if len(r.StopSequences) > 0 {
		chat.Stop = &openai.Stop{Strings: r.StopSequences}
	}
	if present(r.Metadata) {
		var md struct {
			UserID *string `json:"user_id"`
		}
		_ = json.Unmarshal(r.Metadata, &md) // validate checked it
		if md.UserID != nil {
			chat.User = *md.UserID
		}
	}
	system, err := systemText(r.System)
	if err != nil {
		return nil, err
	}
	if system != "" {
		chat.Messages = append(chat.Messages, textMessage("system", system))
	}
	for i, m := range r.Messages {
		msgs, err := turnMessages(i, m)
		if err != nil {
			return nil, err
		}
		chat.Messages = append(chat.Messages, msgs...)
	}
	if last := r.Messages[len(r.Messages)-1]; last.Role == "assistant" {
		if n := len(chat.Messages); len(chat.Messages[n-1].ToolCalls) > 0 {
			return nil, invalid(fmt.Sprintf("messages[%d]", len(r.Messages)-1), "messages[%d]: the last message may not be an assistant turn with tool_use blocks: answer them with tool_result blocks in a user turn", len(r.Messages)-1)
		}
		yes, no := true, false
		chat.ContinueFinalMessage, chat.AddGenerationPrompt = &yes, &no
	}
	if chat.Tools, err = chatTools(r.Tools); err != nil {
		return nil, err
	}
	if err := r.setToolChoice(chat); err != nil {
		return nil, err
	}
	if err := r.setThinking(chat); err != nil {
		return nil, err
	}
	if err := chat.Validate(); err != nil {
		return nil, err
	}
	return chat, nil
}

// textMessage is a chat message with string content.
func textMessage(role, text string) openai.Message {
	return openai.Message{Role: role, Content: openai.Content{Text: &text}}
}

// systemText reads system: a string or a list of text blocks, joined
// with newlines.
func systemText(raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", nil
	}
	return textContent("system", raw)
}

// textContent reads a content that must be text: a string, or a list of
// text blocks joined with newlines (tool_result content, system).
func textContent(param string, raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", invalid(param, "%s: expected a string or a list of text blocks", param)
	}
	texts := make([]string, 0, len(blocks))
	for j, raw := range blocks {
		bp := fmt.Sprintf("%s[%d]", param, j)
		b, err := parseBlock(bp, raw)
		if err != nil {
			return "", err
		}
		if b.Type != "text" {
			return "", unsupportedBlock(bp, b.Type, "only text blocks are")
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// tool is a client tool in Anthropic's shape.
type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// chatTools translates client tools into chat function tools; server
// tools (web_search, bash, text_editor, ...) are refused.
func chatTools(tools []json.RawMessage) ([]openai.Tool, error) {
	var out []openai.Tool
	for i, raw := range tools {
		param := fmt.Sprintf("tools[%d]", i)
		var t tool
		if err := json.Unmarshal(raw, &t); err != nil || !isObject(raw) {
			return nil, invalid(param, "%s: expected a tool object with name and input_schema", param)
		}
		if t.Type != "" && t.Type != "custom" {
			return nil, invalid(param+".type", "%s: tool type `%s` is not supported: this server runs no server tools; only client tools (name, description, input_schema) are", param, t.Type)
		}
		if t.Name == "" {
			return nil, invalid(param+".name", "%s.name: field required", param)
		}
		if !isObject(t.InputSchema) {
			return nil, invalid(param+".input_schema", "%s.input_schema: field required: a JSON schema object", param)
		}
		out = append(out, openai.Tool{Type: "function", Function: openai.FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return out, nil
}

// setToolChoice translates tool_choice: auto, any (chat's required),
// tool with a name (a named function) and none; disable_parallel_tool_use
// becomes parallel_tool_calls false.
func (r *Request) setToolChoice(chat *openai.ChatCompletionRequest) error {
	if !present(r.ToolChoice) {
		return nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(r.ToolChoice, &tc); err != nil || !isObject(r.ToolChoice) {
		return invalid("tool_choice", "tool_choice: expected an object {\"type\": \"auto\"|\"any\"|\"tool\"|\"none\"}")
	}
	var choice any
	switch tc.Type {
	case "auto":
		choice = openai.ToolChoiceAuto
	case "none":
		choice = openai.ToolChoiceNone
	case "any":
		if len(chat.Tools) == 0 {
			return invalid("tool_choice", "tool_choice: `any` needs at least one tool in `tools`")
		}
		choice = openai.ToolChoiceRequired
	case "tool":
		if tc.Name == "" {
			return invalid("tool_choice.name", "tool_choice.name: field required for type `tool`")
		}
		found := false
		for _, t := range chat.Tools {
			found = found || t.Function.Name == tc.Name
		}
		if !found {
			return invalid("tool_choice.name", "tool_choice.name: tool `%s` is not in `tools`", tc.Name)
		}
		choice = map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
	default:
		return invalid("tool_choice.type", "tool_choice.type: `%s` is not one of `auto`, `any`, `tool`, `none`", tc.Type)
	}
	chat.ToolChoiceRaw, _ = json.Marshal(choice)
	if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
		no := false
		chat.ParallelToolCalls = &no
	}
	return nil
}

// setThinking translates thinking. Enabled (or adaptive) turns the
// model's thinking on through the chat template (enable_thinking) and
// budget_tokens becomes nvext.max_thinking_tokens, the engine's
// reasoning-token limit; disabled turns it off. Absent, the model thinks
// as it does by default.
func (r *Request) setThinking(chat *openai.ChatCompletionRequest) error {
	if !present(r.Thinking) {
		return nil
	}
	var th struct {
		Type         string `json:"type"`
		BudgetTokens *int64 `json:"budget_tokens"`
	}
	if err := json.Unmarshal(r.Thinking, &th); err != nil || !isObject(r.Thinking) {
		return invalid("thinking", "thinking: expected {\"type\": \"enabled\", \"budget_tokens\": N} or {\"type\": \"disabled\"}")
	}
	on := false
	switch th.Type {
	case "enabled":
		on = true
		if th.BudgetTokens == nil {
			return invalid("thinking.budget_tokens", "thinking.budget_tokens: field required for type `enabled`")
		}
		b := *th.BudgetTokens
		if b < 1 || b > 1<<31 || r.MaxTokens != nil && b >= *r.MaxTokens {
			return invalid("thinking.budget_tokens", "thinking.budget_tokens: must be at least 1 and less than max_tokens, got %d", b)
		}
		n := uint32(b)
		chat.NvExt = &openai.NvExt{MaxThinkingTokens: &n}
	case "adaptive":
		on = true
	case "disabled":
	default:
		return invalid("thinking.type", "thinking.type: `%s` is not one of `enabled`, `adaptive`, `disabled`", th.Type)
	}
	chat.Thinking = append(json.RawMessage(nil), r.Thinking...)
	chat.ChatTemplateArgs, _ = json.Marshal(map[string]bool{"enable_thinking": on})
	return nil
}
