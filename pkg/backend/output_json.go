package backend

import (
	"encoding/json"
	"strconv"
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

// DecodeOutput decodes one engine output. The token-ids-only shape is
// parsed directly; anything else goes through encoding/json.
func DecodeOutput(b []byte, o *Output) error {
	if ids, ok := parseTokensOnly(b); ok {
		*o = Output{TokenIDs: ids}
		return nil
	}
	*o = Output{}
	return json.Unmarshal(b, o)
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
