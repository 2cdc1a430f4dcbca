package openai

import "github.com/dynamo-go/dynamo/internal/strictjson"

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
			s.StringInto(&r.Model)
		case "messages":
			// splitMessages' placeholder: exactly once, empty.
			if messages || s.Peek() != '[' {
				s.Fail()
				return
			}
			messages = true
			s.Array(s.Fail)
		case "stream":
			s.BoolInto(&r.Stream)
		case "stream_options":
			r.StreamOptions = streamOptions(s, r.StreamOptions)
		case "n":
			r.N = s.OptInt()
		case "max_tokens":
			r.MaxTokens = s.OptInt64()
		case "max_completion_tokens":
			r.MaxCompletionTokens = s.OptInt64()
		case "temperature":
			r.Temperature = s.OptFloat()
		case "top_p":
			r.TopP = s.OptFloat()
		case "frequency_penalty":
			r.FrequencyPenalty = s.OptFloat()
		case "presence_penalty":
			r.PresencePenalty = s.OptFloat()
		case "seed":
			r.Seed = s.OptInt64()
		case "logprobs":
			r.Logprobs = s.OptBool()
		case "top_logprobs":
			r.TopLogprobs = s.OptInt()
		case "parallel_tool_calls":
			r.ParallelToolCalls = s.OptBool()
		case "user":
			s.StringInto(&r.User)
		case "add_generation_prompt":
			r.AddGenerationPrompt = s.OptBool()
		case "continue_final_message":
			r.ContinueFinalMessage = s.OptBool()
		case "ignore_eos":
			r.IgnoreEOS = s.OptBool()
		case "min_tokens":
			r.MinTokens = s.OptUint32()
		case "top_k":
			r.TopK = s.OptInt()
		case "min_p":
			r.MinP = s.OptFloat()
		case "repetition_penalty":
			r.RepetitionPenalty = s.OptFloat()
		case "include_stop_str_in_output":
			r.IncludeStopStrInOutput = s.OptBool()
		case "skip_special_tokens":
			r.SkipSpecialTokens = s.OptBool()
		case "return_tokens_as_token_ids":
			r.ReturnTokensAsTokenIDs = s.OptBool()
		case "detokenize":
			r.Detokenize = s.OptBool()
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
		s.BoolInto(b)
	})
	return into
}
