package backend

import (
	"github.com/dynamo-go/dynamo/internal/strictjson"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// A worker decodes every request it serves; through encoding/json's
// reflection that was the largest part of the mocker's own CPU per
// request after its system calls (docs/benchmarks.md). Requests as the
// frontend writes them are read here without reflection; one with a field
// this reader does not know (the raw-JSON ones, those of disaggregation),
// or outside strictjson's subset, goes to encoding/json,
// so the result is always json.Unmarshal's (FuzzDecodeRequest).

// decodeRequestStrict decodes b into q, a zero Request, and reports
// whether it could; when it could not, q holds a partial result.
func decodeRequestStrict(b []byte, q *Request) bool {
	r := strictjson.New(b)
	r.Object(func(key []byte) {
		switch string(key) {
		case "model":
			r.StringInto(&q.Model)
		case "token_ids":
			q.TokenIDs = uint32sOrNil(r, q.TokenIDs)
		case "stop_conditions":
			if !r.Null() {
				stopConditions(r, &q.StopConditions)
			}
		case "sampling_options":
			if !r.Null() {
				samplingOptions(r, &q.SamplingOptions)
			}
		case "output_options":
			if !r.Null() {
				outputOptions(r, &q.OutputOptions)
			}
		case "eos_token_ids":
			q.EOSTokenIDs = uint32sOrNil(r, q.EOSTokenIDs)
		case "mdc_sum":
			r.StringInto(&q.MDCSum)
		case "annotations":
			q.Annotations = stringsOrNil(r)
		case "routing":
			q.Routing = routing(r, q.Routing)
		case "embedding":
			q.Embedding = embedding(r, q.Embedding)
		case "migrated_tokens":
			r.IntInto(&q.MigratedTokens)
		case "postprocess":
			q.Postprocess = postprocess(r, q.Postprocess)
		case "migration_link":
			q.MigrationLink = traceLink(r, q.MigrationLink)
		case "_HEALTH_CHECK":
			r.BoolInto(&q.HealthCheck)
		default:
			r.Fail()
		}
	})
	return r.End()
}

func stopConditions(r *strictjson.Reader, s *StopConditions) {
	r.Object(func(key []byte) {
		switch string(key) {
		case "max_tokens":
			s.MaxTokens = r.OptUint32()
		case "stop":
			s.Stop = stringsOrNil(r)
		case "stop_token_ids":
			s.StopTokenIDs = uint32sOrNil(r, s.StopTokenIDs)
		case "stop_token_ids_visible":
			s.StopTokenIDsVisible = uint32sOrNil(r, s.StopTokenIDsVisible)
		case "stop_token_ids_hidden":
			s.StopTokenIDsHidden = uint32sOrNil(r, s.StopTokenIDsHidden)
		case "min_tokens":
			s.MinTokens = r.OptUint32()
		case "ignore_eos":
			s.IgnoreEOS = r.OptBool()
		case "max_thinking_tokens":
			s.MaxThinkingTokens = r.OptUint32()
		default:
			r.Fail()
		}
	})
}

func samplingOptions(r *strictjson.Reader, s *SamplingOptions) {
	r.Object(func(key []byte) {
		switch string(key) {
		case "n":
			s.N = r.OptInt()
		case "best_of":
			s.BestOf = r.OptInt()
		case "presence_penalty":
			s.PresencePenalty = r.OptFloat()
		case "frequency_penalty":
			s.FrequencyPenalty = r.OptFloat()
		case "repetition_penalty":
			s.RepetitionPenalty = r.OptFloat()
		case "temperature":
			s.Temperature = r.OptFloat()
		case "top_p":
			s.TopP = r.OptFloat()
		case "top_k":
			s.TopK = r.OptInt()
		case "min_p":
			s.MinP = r.OptFloat()
		case "use_beam_search":
			s.UseBeamSearch = r.OptBool()
		case "length_penalty":
			s.LengthPenalty = r.OptFloat()
		case "seed":
			s.Seed = r.OptInt64()
		case "include_stop_str_in_output":
			s.IncludeStopStrInOutput = r.OptBool()
		default:
			r.Fail()
		}
	})
}

func outputOptions(r *strictjson.Reader, o *OutputOptions) {
	r.Object(func(key []byte) {
		switch string(key) {
		case "logprobs":
			o.Logprobs = r.OptUint32()
		case "prompt_logprobs":
			o.PromptLogprobs = r.OptUint32()
		case "skip_special_tokens":
			o.SkipSpecialTokens = r.OptBool()
		case "formatted_prompt":
			o.FormattedPrompt = r.OptBool()
		case "return_tokens_as_token_ids":
			o.ReturnTokensAsTokenIDs = r.OptBool()
		default:
			r.Fail()
		}
	})
}

// routing decodes into into (a new Routing when nil), or returns nil for
// null.
func routing(r *strictjson.Reader, into *Routing) *Routing {
	if r.Null() {
		return nil
	}
	if into == nil {
		into = new(Routing)
	}
	r.Object(func(key []byte) {
		switch string(key) {
		case "backend_instance_id":
			into.BackendInstanceID = r.OptUint64()
		case "prefill_worker_id":
			into.PrefillWorkerID = r.OptUint64()
		case "decode_worker_id":
			into.DecodeWorkerID = r.OptUint64()
		case "dp_rank":
			into.DPRank = r.OptUint32()
		case "prefill_dp_rank":
			into.PrefillDPRank = r.OptUint32()
		case "expected_output_tokens":
			into.ExpectedOutputTokens = r.OptUint32()
		case "lora_name":
			into.LoraName = r.OptString()
		case "cache_salt":
			into.CacheSalt = r.OptString()
		case "priority":
			into.Priority = r.OptInt()
		case "strict_priority":
			into.StrictPriority = r.OptBool()
		default:
			r.Fail()
		}
	})
	return into
}

func embedding(r *strictjson.Reader, into *EmbeddingOptions) *EmbeddingOptions {
	if r.Null() {
		return nil
	}
	if into == nil {
		into = new(EmbeddingOptions)
	}
	r.Object(func(key []byte) {
		if string(key) != "dimensions" {
			r.Fail()
			return
		}
		into.Dimensions = r.OptInt()
	})
	return into
}

func postprocess(r *strictjson.Reader, into *Postprocess) *Postprocess {
	if r.Null() {
		return nil
	}
	if into == nil {
		into = new(Postprocess)
	}
	r.Object(func(key []byte) {
		switch string(key) {
		case "chat":
			r.BoolInto(&into.Chat)
		case "thinking":
			r.BoolInto(&into.Thinking)
		case "tool_choice":
			r.StringInto(&into.ToolChoice)
		case "tool_name":
			r.StringInto(&into.ToolName)
		case "single_tool_call":
			r.BoolInto(&into.SingleToolCall)
		case "tools":
			into.Tools = stringsOrNil(r)
		default:
			r.Fail()
		}
	})
	return into
}

// traceLink decodes into into (a new Link when nil), or returns nil for
// null.
func traceLink(r *strictjson.Reader, into *telemetry.Link) *telemetry.Link {
	if r.Null() {
		return nil
	}
	if into == nil {
		into = new(telemetry.Link)
	}
	r.Object(func(key []byte) {
		switch string(key) {
		case "trace_id":
			r.StringInto(&into.TraceID)
		case "span_id":
			r.StringInto(&into.SpanID)
		default:
			r.Fail()
		}
	})
	return into
}

// The list readers below follow encoding/json: null sets a slice to nil.

// uint32sOrNil reads an array of ids, reusing into's array as
// encoding/json does, or nil for null.
func uint32sOrNil(r *strictjson.Reader, into []uint32) []uint32 {
	if r.Null() {
		return nil
	}
	return r.Uint32s(into)
}

func stringsOrNil(r *strictjson.Reader) []string {
	if r.Null() {
		return nil
	}
	return r.Strings()
}
