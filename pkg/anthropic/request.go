package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// Request is the body of POST /v1/messages (and, without max_tokens, of
// /v1/messages/count_tokens). The fields the translation reads block by
// block are kept as raw JSON.
type Request struct {
	Model     string `json:"model"`
	MaxTokens *int64 `json:"max_tokens"`
	// Messages alternate user and assistant turns; each content is a
	// string or a list of content blocks.
	Messages []MessageParam `json:"messages"`
	// System is a string or a list of text blocks.
	System        json.RawMessage `json:"system,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	// Tools are client tools: name, description, input_schema.
	Tools []json.RawMessage `json:"tools,omitempty"`
	// ToolChoice is {"type":"auto"|"any"|"tool"|"none", "name",
	// "disable_parallel_tool_use"}.
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	// Thinking is {"type":"enabled","budget_tokens":N} or
	// {"type":"disabled"}.
	Thinking json.RawMessage `json:"thinking,omitempty"`
	// Metadata is {"user_id": ...}; user_id becomes the chat request's
	// user.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Accepted and ignored: there is one service tier, one place of
	// inference, and the engine's prefix cache needs no breakpoints.
	ServiceTier  json.RawMessage `json:"service_tier,omitempty"`
	InferenceGeo json.RawMessage `json:"inference_geo,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// MessageParam is one turn of a request's conversation.
type MessageParam struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// knownFields are the top-level fields a request may have.
var knownFields = []string{"model", "max_tokens", "messages", "system", "stop_sequences", "stream",
	"temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "metadata", "service_tier", "inference_geo", "cache_control"}

// DecodeOptions control decoding.
type DecodeOptions struct {
	// AllowUnknownFields ignores unknown top-level fields instead of
	// refusing them (DYN_IGNORE_OPENAI_FE_UNSUPPORTED_FIELDS).
	AllowUnknownFields bool
}

// Decode decodes and validates a POST /v1/messages body and translates
// it into the chat completions request that serves it. Every failure is
// an *openai.ValidationError naming the field at fault.
func Decode(body []byte, opts DecodeOptions) (*Request, *openai.ChatCompletionRequest, error) {
	return decode(body, opts, true)
}

// DecodeCountTokens is Decode for POST /v1/messages/count_tokens:
// max_tokens is not needed.
func DecodeCountTokens(body []byte, opts DecodeOptions) (*Request, *openai.ChatCompletionRequest, error) {
	return decode(body, opts, false)
}

func decode(body []byte, opts DecodeOptions, needMaxTokens bool) (*Request, *openai.ChatCompletionRequest, error) {
	var r Request
	if err := decodeObject(body, opts, &r); err != nil {
		return nil, nil, err
	}
	if err := r.validate(needMaxTokens); err != nil {
		return nil, nil, err
	}
	chat, err := r.toChat()
	if err != nil {
		return nil, nil, err
	}
	return &r, chat, nil
}

// decodeObject decodes body, a JSON object, into r, refusing unknown
// top-level fields unless opts allow them.
func decodeObject(body []byte, opts DecodeOptions, r *Request) error {
	if !utf8.Valid(body) {
		return invalid("", "request body is not valid UTF-8")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return invalid("", "request body must be a JSON object")
	}
	var unknown []string
	for k := range top {
		if !slices.Contains(knownFields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if !opts.AllowUnknownFields {
			param := ""
			if len(unknown) == 1 {
				param = unknown[0]
			}
			return invalid(param, "Unsupported parameter(s): %s", quoteList(unknown))
		}
		for _, k := range unknown {
			delete(top, k)
		}
	}
	// Field by field, so that an error names its field and encoding/json's
	// case-insensitive matching cannot map an unknown key onto one.
	for k, v := range top {
		rebuilt, _ := json.Marshal(map[string]json.RawMessage{k: v})
		if err := json.Unmarshal(rebuilt, r); err != nil {
			return invalid(k, "%s: %s", k, typeMessage(err))
		}
	}
	return nil
}

// typeMessage is what a decoding failure says about the value.
func typeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("expected %s, got a JSON %s", jsonKind(te.Type.String()), te.Value)
	}
	return "invalid value"
}

// jsonKind names a Go type of Request as a JSON kind.
func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	case strings.Contains(goType, "string"):
		return "a string"
	}
	return "an object"
}

// Limits checked by validate.
const (
	maxTemperature = 1.0
	maxStops       = 32
)

// validate checks the request's scalar fields; blocks, tools and
// tool_choice are checked as they are translated.
func (r *Request) validate(needMaxTokens bool) error {
	switch {
	case strings.TrimSpace(r.Model) == "":
		return invalid("model", "model: field required")
	case r.MaxTokens == nil && needMaxTokens:
		return invalid("max_tokens", "max_tokens: field required")
	case r.MaxTokens != nil && *r.MaxTokens < 1:
		return invalid("max_tokens", "max_tokens: must be at least 1, got %d", *r.MaxTokens)
	case len(r.Messages) == 0:
		return invalid("messages", "messages: at least one message is required")
	case r.Temperature != nil && !(*r.Temperature >= 0 && *r.Temperature <= maxTemperature):
		return invalid("temperature", "temperature: must be between 0 and 1, got %v", *r.Temperature)
	case r.TopP != nil && !(*r.TopP >= 0 && *r.TopP <= 1):
		return invalid("top_p", "top_p: must be between 0 and 1, got %v", *r.TopP)
	case r.TopK != nil && *r.TopK < 0:
		return invalid("top_k", "top_k: must not be negative, got %d", *r.TopK)
	case len(r.StopSequences) > maxStops:
		return invalid("stop_sequences", "stop_sequences: at most %d, got %d", maxStops, len(r.StopSequences))
	}
	for i, s := range r.StopSequences {
		if s == "" {
			return invalid(fmt.Sprintf("stop_sequences[%d]", i), "stop_sequences[%d]: must not be empty", i)
		}
	}
	if present(r.Metadata) {
		var md struct {
			UserID *string `json:"user_id"`
		}
		if err := json.Unmarshal(r.Metadata, &md); err != nil || !isObject(r.Metadata) {
			return invalid("metadata", "metadata: expected an object with an optional string user_id")
		}
	}
	return nil
}

// invalid is a validation error of param ("" for none).
func invalid(param, format string, args ...any) *openai.ValidationError {
	return &openai.ValidationError{Message: fmt.Sprintf(format, args...), Param: param}
}

// present reports whether raw holds a value other than null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}

// quoteList writes names as "`a`, `b`".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}
