package preprocessor

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// ChatAccumulator folds a chat chunk stream into the unary response:
// content concatenated per choice, tool calls collected, the last finish
// reason kept, usage taken from the chunk that carries it. The zero value
// is ready to use.
type ChatAccumulator struct {
	head    *openai.ChatCompletionChunk
	choices map[int]*chatFold
	usage   *openai.Usage
}

type chatFold struct {
	content   strings.Builder
	reasoning strings.Builder
	hasText   bool
	hasReason bool
	tools     []openai.ToolCall
	indexes   []int              // the streamed index of each of tools
	args      []*strings.Builder // the arguments of each of tools
	function  *openai.FunctionCall
	fnArgs    strings.Builder // the arguments of function
	finish    *string
	logprobs  *openai.ChatLogprobs
}

// Add folds one chunk in.
func (a *ChatAccumulator) Add(c *openai.ChatCompletionChunk) {
	if a.head == nil {
		a.head = c
		a.choices = map[int]*chatFold{}
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		f := a.choices[ch.Index]
		if f == nil {
			f = &chatFold{}
			a.choices[ch.Index] = f
		}
		if ch.Delta.Content != nil {
			f.content.WriteString(*ch.Delta.Content)
			f.hasText = true
		}
		if ch.Delta.ReasoningContent != nil {
			f.reasoning.WriteString(*ch.Delta.ReasoningContent)
			f.hasReason = true
		}
		for _, tc := range ch.Delta.ToolCalls {
			f.addCall(tc)
		}
		if fc := ch.Delta.FunctionCall; fc != nil {
			if f.function == nil {
				f.function = &openai.FunctionCall{}
			}
			f.function.Name += fc.Name
			f.fnArgs.WriteString(argText(fc.Arguments))
		}
		if ch.FinishReason != nil {
			f.finish = ch.FinishReason
		}
		if ch.Logprobs != nil {
			if f.logprobs == nil {
				f.logprobs = &openai.ChatLogprobs{}
			}
			f.logprobs.Content = append(f.logprobs.Content, ch.Logprobs.Content...)
		}
	}
}

// Result returns the folded chat.completion (nil if no chunk was added).
func (a *ChatAccumulator) Result() *openai.ChatCompletion {
	if a.head == nil {
		return nil
	}
	out := &openai.ChatCompletion{
		ID: a.head.ID, Object: openai.ObjectChatCompletion, Created: a.head.Created,
		Model: a.head.Model, Usage: a.usage, Choices: []openai.ChatChoice{},
	}
	for _, i := range sortedKeys(a.choices) {
		f := a.choices[i]
		for k := range f.tools {
			f.tools[k].Function.Arguments, _ = json.Marshal(f.args[k].String())
		}
		if f.function != nil {
			f.function.Arguments, _ = json.Marshal(f.fnArgs.String())
		}
		msg := openai.ChatMessage{Role: "assistant", ToolCalls: f.tools, FunctionCall: f.function}
		if text := f.content.String(); text != "" || (len(f.tools) == 0 && f.function == nil) {
			msg.Content = &text // null beside calls and no text, as OpenAI
		}
		if f.hasReason {
			r := f.reasoning.String()
			msg.ReasoningContent = &r
		}
		out.Choices = append(out.Choices, openai.ChatChoice{Index: i, Message: msg, FinishReason: f.finish, Logprobs: f.logprobs})
	}
	return out
}

// addCall folds one streamed tool call in: a call with the index of an
// earlier one continues it (its name and argument fragments are
// appended), any other is a new call. The unary message's calls carry
// no index.
func (f *chatFold) addCall(tc openai.ToolCall) {
	if tc.Index != nil {
		for i := range f.tools {
			if f.indexes[i] == *tc.Index {
				t := &f.tools[i]
				if t.ID == "" {
					t.ID = tc.ID
				}
				if t.Type == "" {
					t.Type = tc.Type
				}
				t.Function.Name += tc.Function.Name
				f.args[i].WriteString(argText(tc.Function.Arguments))
				return
			}
		}
		f.indexes = append(f.indexes, *tc.Index)
	} else {
		f.indexes = append(f.indexes, -1-len(f.tools))
	}
	b := &strings.Builder{}
	b.WriteString(argText(tc.Function.Arguments))
	f.args = append(f.args, b)
	tc.Index = nil
	f.tools = append(f.tools, tc)
}

// argText reads an argument fragment: a JSON string (or, from a lenient
// client, raw JSON taken as its text).
func argText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// CompletionAccumulator folds a completions chunk stream into the unary
// response. The zero value is ready to use.
type CompletionAccumulator struct {
	head    *openai.Completion
	choices map[int]*completionFold
	usage   *openai.Usage
}

type completionFold struct {
	text     strings.Builder
	finish   *string
	logprobs *openai.CompletionLogprobs
}

// Add folds one chunk in.
func (a *CompletionAccumulator) Add(c *openai.Completion) {
	if a.head == nil {
		a.head = c
		a.choices = map[int]*completionFold{}
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		f := a.choices[ch.Index]
		if f == nil {
			f = &completionFold{}
			a.choices[ch.Index] = f
		}
		f.text.WriteString(ch.Text)
		if ch.FinishReason != nil {
			f.finish = ch.FinishReason
		}
		if lp := ch.Logprobs; lp != nil {
			if f.logprobs == nil {
				f.logprobs = &openai.CompletionLogprobs{}
			}
			f.logprobs.Tokens = append(f.logprobs.Tokens, lp.Tokens...)
			f.logprobs.TokenLogprobs = append(f.logprobs.TokenLogprobs, lp.TokenLogprobs...)
			f.logprobs.TopLogprobs = append(f.logprobs.TopLogprobs, lp.TopLogprobs...)
			f.logprobs.TextOffset = append(f.logprobs.TextOffset, lp.TextOffset...)
		}
	}
}

// Result returns the folded text_completion (nil if no chunk was added).
func (a *CompletionAccumulator) Result() *openai.Completion {
	if a.head == nil {
		return nil
	}
	out := &openai.Completion{
		ID: a.head.ID, Object: openai.ObjectTextCompletion, Created: a.head.Created,
		Model: a.head.Model, Usage: a.usage, Choices: []openai.CompletionChoice{},
	}
	for _, i := range sortedKeys(a.choices) {
		f := a.choices[i]
		out.Choices = append(out.Choices, openai.CompletionChoice{Index: i, Text: f.text.String(), FinishReason: f.finish, Logprobs: f.logprobs})
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
