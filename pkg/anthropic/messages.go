package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// block is one content block of a request turn, with the fields of every
// block type the translation reads.
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// mediaBlocks are the block types that need a multimodal input path,
// which the server does not have yet.
var mediaBlocks = map[string]bool{"image": true, "document": true, "search_result": true, "container_upload": true}

// parseBlock decodes one content block at param and checks the fields
// its type needs.
func parseBlock(param string, raw json.RawMessage) (block, error) {
	var b block
	if err := json.Unmarshal(raw, &b); err != nil || !isObject(raw) {
		return block{}, invalid(param, "%s: expected a content block object", param)
	}
	switch b.Type {
	case "":
		return block{}, invalid(param+".type", "%s.type: field required", param)
	case "text":
		if b.Text == nil {
			return block{}, invalid(param+".text", "%s.text: field required", param)
		}
	case "tool_use":
		if b.ID == "" || b.Name == "" {
			return block{}, invalid(param, "%s: a tool_use block needs id and name", param)
		}
		if present(b.Input) && !isObject(b.Input) {
			return block{}, invalid(param+".input", "%s.input: expected an object", param)
		}
	case "tool_result":
		if b.ToolUseID == "" {
			return block{}, invalid(param+".tool_use_id", "%s.tool_use_id: field required", param)
		}
	}
	return b, nil
}

// unsupportedBlock refuses a block type at param.
func unsupportedBlock(param, typ, supported string) error {
	if mediaBlocks[typ] {
		return invalid(param+".type", "%s: `%s` blocks are not supported: this server has no multimodal input path yet; send text", param, typ)
	}
	return invalid(param+".type", "%s: block type `%s` is not supported here; %s", param, typ, supported)
}

// turnMessages translates turn i into chat messages. A user turn's text
// blocks become user messages and its tool_result blocks tool messages,
// in their order; an assistant turn becomes one assistant message, its
// text blocks the content and its tool_use blocks the tool calls (its
// thinking blocks, a previous answer's, are dropped, as chat templates
// drop past reasoning).
func turnMessages(i int, m MessageParam) ([]openai.Message, error) {
	param := fmt.Sprintf("messages[%d]", i)
	if m.Role != "user" && m.Role != "assistant" {
		return nil, invalid(param+".role", "%s.role: `%s` is not one of `user`, `assistant` (a system prompt goes in `system`)", param, m.Role)
	}
	if !present(m.Content) {
		return nil, invalid(param+".content", "%s.content: field required", param)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []openai.Message{textMessage(m.Role, s)}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(m.Content, &raws); err != nil {
		return nil, invalid(param+".content", "%s.content: expected a string or a list of content blocks", param)
	}
	blocks := make([]block, len(raws))
	for j, raw := range raws {
		b, err := parseBlock(fmt.Sprintf("%s.content[%d]", param, j), raw)
		if err != nil {
			return nil, err
		}
		blocks[j] = b
	}
	if m.Role == "assistant" {
		msg, err := assistantMessage(param, blocks)
		return []openai.Message{msg}, err
	}
	return userMessages(param, blocks)
}

// userMessages translates a user turn's blocks.
func userMessages(param string, blocks []block) ([]openai.Message, error) {
	var out []openai.Message
	var text []string // text blocks not yet in a message
	flush := func() {
		if len(text) > 0 {
			out = append(out, textMessage("user", joinLines(text)))
			text = nil
		}
	}
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.content[%d]", param, j)
		switch b.Type {
		case "text":
			text = append(text, *b.Text)
		case "tool_result":
			flush()
			content := ""
			if present(b.Content) {
				var err error
				if content, err = textContent(bp+".content", b.Content); err != nil {
					return nil, err
				}
			}
			if b.IsError {
				content = "Error: " + content
			}
			msg := textMessage("tool", content)
			msg.ToolCallID = b.ToolUseID
			out = append(out, msg)
		default:
			return nil, unsupportedBlock(bp, b.Type, "a user turn takes `text` and `tool_result` blocks")
		}
	}
	flush()
	if len(out) == 0 {
		out = append(out, textMessage("user", ""))
	}
	return out, nil
}

// assistantMessage translates an assistant turn's blocks.
func assistantMessage(param string, blocks []block) (openai.Message, error) {
	var text []string
	var calls []openai.ToolCall
	for j, b := range blocks {
		switch b.Type {
		case "text":
			text = append(text, *b.Text)
		case "tool_use":
			input := b.Input
			if !present(input) {
				input = json.RawMessage("{}")
			}
			args, _ := json.Marshal(string(input)) // on the chat wire the arguments are a JSON string
			calls = append(calls, openai.ToolCall{ID: b.ID, Type: "function", Function: openai.FunctionCall{Name: b.Name, Arguments: args}})
		case "thinking", "redacted_thinking":
		default:
			return openai.Message{}, unsupportedBlock(fmt.Sprintf("%s.content[%d]", param, j), b.Type, "an assistant turn takes `text`, `tool_use` and `thinking` blocks")
		}
	}
	// Content "" rather than null: templates that concatenate the
	// content fail on null.
	msg := textMessage("assistant", joinLines(text))
	msg.ToolCalls = calls
	return msg, nil
}

// joinLines joins texts with newlines, as chat joins text parts.
func joinLines(texts []string) string { return strings.Join(texts, "\n") }
