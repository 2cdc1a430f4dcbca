package backend

import (
	"strconv"

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
			setString(r, &q.Model)
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
			setString(r, &q.MDCSum)
		case "annotations":
			q.Annotations = stringsOrNil(r)
		case "routing":
			q.Routing = routing(r, q.Routing)
		case "embedding":
			q.Embedding = embedding(r, q.Embedding)
		case "migrated_tokens":
			if !r.Null() {
				q.MigratedTokens = int(r.Int(strconv.IntSize))
			}
		case "postprocess":
			q.Postprocess = postprocess(r, q.Postprocess)
		case "migration_link":
			q.MigrationLink = traceLink(r, q.MigrationLink)
		case "_HEALTH_CHECK":
			if !r.Null() {
				q.HealthCheck = r.Bool()
			}
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
			s.MaxTokens = optUint32(r)
		case "stop":
			s.Stop = stringsOrNil(r)
		case "stop_token_ids":
			s.StopTokenIDs = uint32sOrNil(r, s.StopTokenIDs)
		case "stop_token_ids_visible":
			s.StopTokenIDsVisible = uint32sOrNil(r, s.StopTokenIDsVisible)
		case "stop_token_ids_hidden":
			s.StopTokenIDsHidden = uint32sOrNil(r, s.StopTokenIDsHidden)
		case "min_tokens":
			s.MinTokens = optUint32(r)
		case "ignore_eos":
			s.IgnoreEOS = optBool(r)
		case "max_thinking_tokens":
			s.MaxThinkingTokens = optUint32(r)
		default:
			r.Fail()
		}
	})
}

func samplingOptions(r *strictjson.Reader, s *SamplingOptions) {
	r.Object(func(key []byte) {
		switch string(key) {
		case "n":
			s.N = optInt(r)
		case "best_of":
			s.BestOf = optInt(r)
		case "presence_penalty":
			s.PresencePenalty = optFloat(r)
		case "frequency_penalty":
			s.FrequencyPenalty = optFloat(r)
		case "repetition_penalty":
			s.RepetitionPenalty = optFloat(r)
		case "temperature":
			s.Temperature = optFloat(r)
		case "top_p":
			s.TopP = optFloat(r)
		case "top_k":
			s.TopK = optInt(r)
		case "min_p":
			s.MinP = optFloat(r)
		case "use_beam_search":
			s.UseBeamSearch = optBool(r)
		case "length_penalty":
			s.LengthPenalty = optFloat(r)
		case "seed":
			if r.Null() {
				s.Seed = nil
			} else {
				s.Seed = Ptr(r.Int(64))
			}
		case "include_stop_str_in_output":
			s.IncludeStopStrInOutput = optBool(r)
		default:
			r.Fail()
		}
	})
}

func outputOptions(r *strictjson.Reader, o *OutputOptions) {
	r.Object(func(key []byte) {
		switch string(key) {
		case "logprobs":
			o.Logprobs = optUint32(r)
		case "prompt_logprobs":
			o.PromptLogprobs = optUint32(r)
		case "skip_special_tokens":
			o.SkipSpecialTokens = optBool(r)
		case "formatted_prompt":
			o.FormattedPrompt = optBool(r)
		case "return_tokens_as_token_ids":
			o.ReturnTokensAsTokenIDs = optBool(r)
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
			into.BackendInstanceID = optUint64(r)
		case "prefill_worker_id":
			into.PrefillWorkerID = optUint64(r)
		case "decode_worker_id":
			into.DecodeWorkerID = optUint64(r)
		case "dp_rank":
			into.DPRank = optUint32(r)
		case "prefill_dp_rank":
			into.PrefillDPRank = optUint32(r)
		case "expected_output_tokens":
			into.ExpectedOutputTokens = optUint32(r)
		case "lora_name":
			into.LoraName = optString(r)
		case "cache_salt":
			into.CacheSalt = optString(r)
		case "priority":
			into.Priority = optInt(r)
		case "strict_priority":
			into.StrictPriority = optBool(r)
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
		into.Dimensions = optInt(r)
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
			setBool(r, &into.Chat)
		case "thinking":
			setBool(r, &into.Thinking)
		case "tool_choice":
			setString(r, &into.ToolChoice)
		case "tool_name":
			setString(r, &into.ToolName)
		case "single_tool_call":
			setBool(r, &into.SingleToolCall)
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
			setString(r, &into.TraceID)
		case "span_id":
			setString(r, &into.SpanID)
		default:
			r.Fail()
		}
	})
	return into
}

// The value readers below follow encoding/json: null sets a pointer or a
// slice to nil and leaves any other value as it was.

func setString(r *strictjson.Reader, s *string) {
	if !r.Null() {
		*s = r.String()
	}
}

func setInt(r *strictjson.Reader, n *int) {
	if !r.Null() {
		*n = int(r.Int(strconv.IntSize))
	}
}

func setBool(r *strictjson.Reader, b *bool) {
	if !r.Null() {
		*b = r.Bool()
	}
}

func optString(r *strictjson.Reader) *string {
	if r.Null() {
		return nil
	}
	return Ptr(r.String())
}

func optBool(r *strictjson.Reader) *bool {
	if r.Null() {
		return nil
	}
	return Ptr(r.Bool())
}

func optUint32(r *strictjson.Reader) *uint32 {
	if r.Null() {
		return nil
	}
	return Ptr(uint32(r.Uint(32)))
}

func optUint64(r *strictjson.Reader) *uint64 {
	if r.Null() {
		return nil
	}
	return Ptr(r.Uint(64))
}

func optInt(r *strictjson.Reader) *int {
	if r.Null() {
		return nil
	}
	return Ptr(int(r.Int(strconv.IntSize)))
}

func optFloat(r *strictjson.Reader) *float64 {
	if r.Null() {
		return nil
	}
	return Ptr(r.Float())
}

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
