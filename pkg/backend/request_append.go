package backend

import (
	"math"
	"strconv"

	"github.com/dynamo-go/dynamo/internal/strictjson"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// The frontend writes a request to a worker for every request it serves:
// through encoding/json's reflection that was 3 % of its CPU at
// saturation (docs/benchmarks.md). appendRequestJSON writes the same bytes
// directly for every request without the raw-JSON fields (those of
// disaggregation, guided decoding, extra and multimodal arguments), which
// go to encoding/json as before (TestRequestJSONIsEncodingJSONs,
// FuzzRequestJSON compare the two).

// appendRequestJSON appends r's JSON encoding, as encoding/json writes
// requestFields, to b; ok is false (b unchanged in meaning) when r has a
// field it leaves to encoding/json, or a float encoding/json refuses.
func appendRequestJSON(b []byte, r *Request) (_ []byte, ok bool) {
	if len(r.RouterConfigOverride) > 0 || r.PrefillResult != nil || r.BootstrapInfo != nil ||
		len(r.ExtraArgs) > 0 || len(r.MultiModalData) > 0 || len(r.SamplingOptions.GuidedDecoding) > 0 {
		return b, false
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"model":`)
	w.str(r.Model)
	w.raw(`,"token_ids":`)
	switch list := r.PromptJSON.of(r.TokenIDs); {
	case r.TokenIDs == nil:
		w.raw("null")
	case list != nil:
		w.b = append(append(append(w.b, '['), list...), ']')
	default:
		w.b = AppendTokenIDs(w.b, r.TokenIDs)
	}
	w.raw(`,"stop_conditions":{`)
	s := &r.StopConditions
	w.first = true
	w.optUint32("max_tokens", s.MaxTokens)
	w.strs("stop", s.Stop, true)
	w.ids("stop_token_ids", s.StopTokenIDs, true)
	w.ids("stop_token_ids_visible", s.StopTokenIDsVisible, true)
	w.ids("stop_token_ids_hidden", s.StopTokenIDsHidden, true)
	w.optUint32("min_tokens", s.MinTokens)
	w.optBool("ignore_eos", s.IgnoreEOS)
	w.optUint32("max_thinking_tokens", s.MaxThinkingTokens)
	w.raw(`},"sampling_options":{`)
	p := &r.SamplingOptions
	w.first = true
	w.optInt("n", p.N)
	w.optInt("best_of", p.BestOf)
	w.optFloat("presence_penalty", p.PresencePenalty)
	w.optFloat("frequency_penalty", p.FrequencyPenalty)
	w.optFloat("repetition_penalty", p.RepetitionPenalty)
	w.optFloat("temperature", p.Temperature)
	w.optFloat("top_p", p.TopP)
	w.optInt("top_k", p.TopK)
	w.optFloat("min_p", p.MinP)
	w.optBool("use_beam_search", p.UseBeamSearch)
	w.optFloat("length_penalty", p.LengthPenalty)
	if p.Seed != nil {
		w.key("seed")
		w.b = strconv.AppendInt(w.b, *p.Seed, 10)
	}
	w.optBool("include_stop_str_in_output", p.IncludeStopStrInOutput)
	w.raw(`},"output_options":{`)
	o := &r.OutputOptions
	w.first = true
	w.optUint32("logprobs", o.Logprobs)
	w.optUint32("prompt_logprobs", o.PromptLogprobs)
	w.optBool("skip_special_tokens", o.SkipSpecialTokens)
	w.optBool("formatted_prompt", o.FormattedPrompt)
	w.optBool("return_tokens_as_token_ids", o.ReturnTokensAsTokenIDs)
	w.raw(`}`)
	w.first = false
	w.ids("eos_token_ids", r.EOSTokenIDs, false)
	if r.MDCSum != "" {
		w.key("mdc_sum")
		w.str(r.MDCSum)
	}
	w.strs("annotations", r.Annotations, false)
	if g := r.Routing; g != nil {
		w.raw(`,"routing":{`)
		w.first = true
		w.optUint64("backend_instance_id", g.BackendInstanceID)
		w.optUint64("prefill_worker_id", g.PrefillWorkerID)
		w.optUint64("decode_worker_id", g.DecodeWorkerID)
		w.optUint32("dp_rank", g.DPRank)
		w.optUint32("prefill_dp_rank", g.PrefillDPRank)
		w.optUint32("expected_output_tokens", g.ExpectedOutputTokens)
		w.optString("lora_name", g.LoraName)
		w.optString("cache_salt", g.CacheSalt)
		w.optInt("priority", g.Priority)
		w.optBool("strict_priority", g.StrictPriority)
		w.raw(`}`)
		w.first = false
	}
	if e := r.Embedding; e != nil {
		w.raw(`,"embedding":{`)
		w.first = true
		w.optInt("dimensions", e.Dimensions)
		w.raw(`}`)
		w.first = false
	}
	w.link("migration_link", r.MigrationLink)
	if r.MigratedTokens != 0 {
		w.key("migrated_tokens")
		w.b = strconv.AppendInt(w.b, int64(r.MigratedTokens), 10)
	}
	if q := r.Postprocess; q != nil {
		w.raw(`,"postprocess":{`)
		w.first = true
		w.flag("chat", q.Chat)
		w.flag("thinking", q.Thinking)
		if q.ToolChoice != "" {
			w.key("tool_choice")
			w.str(q.ToolChoice)
		}
		if q.ToolName != "" {
			w.key("tool_name")
			w.str(q.ToolName)
		}
		w.flag("single_tool_call", q.SingleToolCall)
		w.strs("tools", q.Tools, true)
		w.raw(`}`)
		w.first = false
	}
	w.flag("_HEALTH_CHECK", r.HealthCheck)
	w.raw(`}`)
	return w.b, w.ok
}

// jsonWriter appends an object's members as encoding/json writes them.
// first says the next member opens its object (no comma); ok turns false
// on a float encoding/json refuses.
type jsonWriter struct {
	b     []byte
	first bool
	ok    bool
}

func (w *jsonWriter) raw(s string) { w.b = append(w.b, s...) }

func (w *jsonWriter) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(append(append(w.b, '"'), k...), '"', ':')
}

// opt writes key k and v's value, appended by value, when v is set.
func opt[T any](w *jsonWriter, k string, v *T, value func([]byte, T) []byte) {
	if v != nil {
		w.key(k)
		w.b = value(w.b, *v)
	}
}

func (w *jsonWriter) optUint32(k string, v *uint32) {
	opt(w, k, v, func(b []byte, x uint32) []byte { return strconv.AppendUint(b, uint64(x), 10) })
}

func (w *jsonWriter) optUint64(k string, v *uint64) {
	opt(w, k, v, func(b []byte, x uint64) []byte { return strconv.AppendUint(b, x, 10) })
}

func (w *jsonWriter) optInt(k string, v *int) {
	opt(w, k, v, func(b []byte, x int) []byte { return strconv.AppendInt(b, int64(x), 10) })
}

func (w *jsonWriter) optBool(k string, v *bool) { opt(w, k, v, strconv.AppendBool) }

func (w *jsonWriter) flag(k string, v bool) {
	if v {
		w.key(k)
		w.raw("true")
	}
}

func (w *jsonWriter) optString(k string, v *string) {
	opt(w, k, v, func(b []byte, x string) []byte { return strictjson.AppendString(b, x, true) })
}

// optFloat writes a float64 as encoding/json does: the shortest decimal
// that reads back, in exponent form below 1e-6 and from 1e21.
func (w *jsonWriter) optFloat(k string, v *float64) {
	if v == nil {
		return
	}
	f := *v
	if math.IsInf(f, 0) || math.IsNaN(f) {
		w.ok = false // encoding/json's error
		return
	}
	w.key(k)
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	w.b = strconv.AppendFloat(w.b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(w.b); n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
			w.b[n-2] = w.b[n-1]
			w.b = w.b[:n-1]
		}
	}
}

// ids writes a list of ids: omitted when empty and omitempty, null when
// nil otherwise.
func (w *jsonWriter) ids(k string, v []uint32, omitempty bool) {
	if omitempty && len(v) == 0 {
		return
	}
	w.key(k)
	if v == nil {
		w.raw("null")
		return
	}
	w.b = AppendTokenIDs(w.b, v)
}

// strs writes a list of strings as ids does a list of ids.
func (w *jsonWriter) strs(k string, v []string, omitempty bool) {
	if omitempty && len(v) == 0 {
		return
	}
	w.key(k)
	if v == nil {
		w.raw("null")
		return
	}
	w.b = append(w.b, '[')
	for i, s := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(s)
	}
	w.b = append(w.b, ']')
}

func (w *jsonWriter) link(k string, l *telemetry.Link) {
	if l == nil {
		return
	}
	w.key(k)
	w.raw(`{"trace_id":`)
	w.str(l.TraceID)
	w.raw(`,"span_id":`)
	w.str(l.SpanID)
	w.raw(`}`)
}

// str writes s as encoding/json does (HTML-escaped).
func (w *jsonWriter) str(s string) { w.b = strictjson.AppendString(w.b, s, true) }
