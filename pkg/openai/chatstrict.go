package openai

import (
	"strconv"

	"github.com/dynamo-go/dynamo/internal/strictjson"
)

// Once splitMessages has read the messages, what is left of a chat body
// is a few scalars (model, stream, max_tokens, sampling parameters).
// decodeObject checks and decodes them in four passes of encoding/json
// (validity, the keys, the struct, the nulls), a few microseconds a
// request; decodeChatTopStrict reads the common ones in one pass without
// reflection. A body with any other key (tools, stop, response_format,
// nvext, the raw ones, an unknown key) or a value outside strictjson's
// subset goes to decodeObject, so every answer and error is the slow
// path's (checkSameAsSlow, FuzzDecodeChat).

// decodeChatTopStrict decodes rest, a chat body whose messages are an
// empty array, into r (zero), and reports whether it could.
func decodeChatTopStrict(rest []byte, r *ChatCompletionRequest) bool {
	s := strictjson.New(rest)
	messages := false
	s.Object(func(key []byte) {
		switch string(key) {
		case "model":
			if !s.Null() {
				r.Model = s.String()
			}
		case "messages":
			// splitMessages' placeholder: exactly once, empty.
			if messages || s.Peek() != '[' {
				s.Fail()
				return
			}
			messages = true
			s.Array(s.Fail)
		case "stream":
			if !s.Null() {
				r.Stream = s.Bool()
			}
		case "stream_options":
			r.StreamOptions = streamOptions(s, r.StreamOptions)
		case "n":
			r.N = optInt(s)
		case "max_tokens":
			r.MaxTokens = optInt64(s)
		case "max_completion_tokens":
			r.MaxCompletionTokens = optInt64(s)
		case "temperature":
			r.Temperature = optFloat(s)
		case "top_p":
			r.TopP = optFloat(s)
		case "frequency_penalty":
			r.FrequencyPenalty = optFloat(s)
		case "presence_penalty":
			r.PresencePenalty = optFloat(s)
		case "seed":
			r.Seed = optInt64(s)
		case "logprobs":
			r.Logprobs = optBool(s)
		case "top_logprobs":
			r.TopLogprobs = optInt(s)
		case "parallel_tool_calls":
			r.ParallelToolCalls = optBool(s)
		case "user":
			if !s.Null() {
				r.User = s.String()
			}
		case "add_generation_prompt":
			r.AddGenerationPrompt = optBool(s)
		case "continue_final_message":
			r.ContinueFinalMessage = optBool(s)
		case "ignore_eos":
			r.IgnoreEOS = optBool(s)
		case "min_tokens":
			r.MinTokens = optUint32(s)
		case "top_k":
			r.TopK = optInt(s)
		case "min_p":
			r.MinP = optFloat(s)
		case "repetition_penalty":
			r.RepetitionPenalty = optFloat(s)
		case "include_stop_str_in_output":
			r.IncludeStopStrInOutput = optBool(s)
		case "skip_special_tokens":
			r.SkipSpecialTokens = optBool(s)
		case "return_tokens_as_token_ids":
			r.ReturnTokensAsTokenIDs = optBool(s)
		case "detokenize":
			r.Detokenize = optBool(s)
		default:
			s.Fail()
		}
	})
	return messages && s.End()
}

func streamOptions(s *strictjson.Reader, into *StreamOptions) *StreamOptions {
	if s.Null() {
		return nil
	}
	if into == nil {
		into = new(StreamOptions)
	}
	s.Object(func(key []byte) {
		var b *bool
		switch string(key) {
		case "include_usage":
			b = &into.IncludeUsage
		case "continuous_usage_stats":
			b = &into.ContinuousUsageStats
		default:
			s.Fail()
			return
		}
		if !s.Null() {
			*b = s.Bool()
		}
	})
	return into
}

// The value readers follow encoding/json: null sets a pointer to nil.

func optBool(s *strictjson.Reader) *bool {
	if s.Null() {
		return nil
	}
	v := s.Bool()
	return &v
}

func optInt(s *strictjson.Reader) *int {
	if s.Null() {
		return nil
	}
	v := int(s.Int(strconv.IntSize))
	return &v
}

func optInt64(s *strictjson.Reader) *int64 {
	if s.Null() {
		return nil
	}
	v := s.Int(64)
	return &v
}

func optUint32(s *strictjson.Reader) *uint32 {
	if s.Null() {
		return nil
	}
	v := uint32(s.Uint(32))
	return &v
}

func optFloat(s *strictjson.Reader) *float64 {
	if s.Null() {
		return nil
	}
	v := s.Float()
	return &v
}
