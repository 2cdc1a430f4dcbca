package backend

import (
	"encoding/json"
	"strconv"

	"github.com/dynamo-go/dynamo/internal/strictjson"
)

// AppendOutputJSON appends o's JSON encoding to b. The common shape, token
// ids only (every output but the last of a stream), is written directly;
// anything else goes through encoding/json. Both give the same bytes.
func AppendOutputJSON(b []byte, o *Output) ([]byte, error) {
	if o.isTokensOnly() {
		b = append(b, `{"token_ids":[`...)
		for i, id := range o.TokenIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(id), 10)
		}
		return append(b, "]}"...), nil
	}
	j, err := json.Marshal(o)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// DecodeOutput decodes one engine output into o, which it zeroes first
// (json.Unmarshal's result and errors). The token-ids-only shape is
// parsed directly, and a stream's first and terminal outputs (ids, the
// worker's trace link, finish reason, usage, index) without reflection; anything else goes through
// encoding/json.
func DecodeOutput(b []byte, o *Output) error {
	if ids, ok := parseTokensOnly(b); ok {
		*o = Output{TokenIDs: ids}
		return nil
	}
	*o = Output{}
	if decodeOutputStrict(b, o) {
		return nil
	}
	*o = Output{}
	return json.Unmarshal(b, o)
}

// decodeOutputStrict decodes the fields of a first or terminal output as
// the workers write them, and reports whether b had no others and was within
// strictjson's subset (request_strict.go says why that is exact).
func decodeOutputStrict(b []byte, o *Output) bool {
	r := strictjson.New(b)
	r.Object(func(key []byte) {
		switch string(key) {
		case "token_ids":
			o.TokenIDs = uint32sOrNil(r, o.TokenIDs)
		case "finish_reason":
			o.FinishReason = finishReason(r)
		case "index":
			o.Index = r.OptUint32()
		case "completion_usage":
			o.CompletionUsage = usage(r, o.CompletionUsage)
		case "worker_trace_link":
			o.WorkerTraceLink = traceLink(r, o.WorkerTraceLink)
		default:
			r.Fail()
		}
	})
	return r.End()
}

// finishReason reads what FinishReason.UnmarshalJSON accepts: a kind's
// name, "abort", or {"error": message}; anything else fails the reader.
func finishReason(r *strictjson.Reader) *FinishReason {
	if r.Null() {
		return nil
	}
	if r.Peek() == '{' {
		var msg *string
		r.Object(func(key []byte) {
			if string(key) != "error" || r.Peek() == 'n' {
				r.Fail()
				return
			}
			msg = Ptr(r.String())
		})
		if msg == nil {
			r.Fail()
			return nil
		}
		return &FinishReason{Kind: FinishError, Message: *msg}
	}
	switch k := FinishKind(r.String()); k {
	case FinishEOS, FinishLength, FinishStop, FinishCancelled, FinishContentFilter:
		return &FinishReason{Kind: k}
	case "abort":
		return &FinishReason{Kind: FinishCancelled}
	}
	r.Fail()
	return nil
}

func usage(r *strictjson.Reader, into *Usage) *Usage {
	if r.Null() {
		return nil
	}
	if into == nil {
		into = new(Usage)
	}
	r.Object(func(key []byte) {
		switch string(key) {
		case "prompt_tokens":
			r.IntInto(&into.PromptTokens)
		case "completion_tokens":
			r.IntInto(&into.CompletionTokens)
		case "total_tokens":
			r.IntInto(&into.TotalTokens)
		case "prompt_tokens_details":
			if r.Null() {
				into.PromptTokensDetails = nil
				return
			}
			if into.PromptTokensDetails == nil {
				into.PromptTokensDetails = new(PromptDetail)
			}
			d := into.PromptTokensDetails
			r.Object(func(key []byte) {
				if string(key) != "cached_tokens" {
					r.Fail()
					return
				}
				r.IntInto(&d.CachedTokens)
			})
		default:
			r.Fail()
		}
	})
	return into
}

func (o *Output) isTokensOnly() bool {
	return o.TokenIDs != nil && o.Tokens == nil && o.Text == nil && o.CumLogProbs == nil &&
		o.LogProbs == nil && o.TopLogprobs == nil && o.FinishReason == nil && o.StopReason == nil &&
		o.Index == nil && o.DisaggregatedParams == nil && o.ExtraArgs == nil && o.CompletionUsage == nil &&
		o.WorkerTraceLink == nil && o.Embedding == nil && !o.Postprocessed && o.ReasoningText == nil && o.ToolCalls == nil
}

// parseTokensOnly parses exactly {"token_ids":[n,...]} (no spaces, as
// AppendOutputJSON and encoding/json write it).
func parseTokensOnly(b []byte) ([]uint32, bool) {
	const head = `{"token_ids":[`
	if len(b) < len(head)+2 || string(b[:len(head)]) != head || string(b[len(b)-2:]) != "]}" {
		return nil, false
	}
	body := b[len(head) : len(b)-2]
	ids := make([]uint32, 0, 1+len(body)/6)
	if len(body) == 0 {
		return ids, true
	}
	var n uint64
	digits := 0
	for _, c := range body {
		switch {
		case c >= '0' && c <= '9':
			if digits == 1 && n == 0 {
				return nil, false // a leading zero: not JSON
			}
			n = n*10 + uint64(c-'0')
			digits++
			if digits > 10 || n > 1<<32-1 {
				return nil, false
			}
		case c == ',' && digits > 0:
			ids = append(ids, uint32(n))
			n, digits = 0, 0
		default:
			return nil, false
		}
	}
	if digits == 0 {
		return nil, false
	}
	return append(ids, uint32(n)), true
}
