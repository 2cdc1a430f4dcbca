package preprocessor

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// DecoderOptions configure one choice's Decoder.
type DecoderOptions struct {
	// PromptIDs seed the DecodeStream so that merges across the prompt
	// boundary decode right.
	PromptIDs []uint32
	// SkipSpecialTokens leaves special tokens out of the text.
	SkipSpecialTokens bool
	// Stop are the stop strings.
	Stop []string
	// IncludeStopStr keeps a matched stop string in the output
	// (include_stop_str_in_output).
	IncludeStopStr bool
	// HiddenStopIDs end the choice; the token's text is not emitted.
	HiddenStopIDs []uint32
	// VisibleStopIDs end the choice; the token's text is emitted. An id in
	// both lists is hidden.
	VisibleStopIDs []uint32
	// MinTokens is how many generated tokens are never stopped on: the
	// first MinTokens tokens get no stop checks (stop ids are decoded as
	// text, stop strings lying wholly in their text do not match), so the
	// earliest possible stop is token MinTokens+1, as in vLLM.
	MinTokens int
}

// DecoderOptionsFor derives the options of a request's choices. The hidden
// stop ids are StopTokenIDsHidden ∪ StopTokenIDs ∪ EOSTokenIDs; with
// IgnoreEOS all three are dropped (ignore_eos only changes which ids stop;
// the request builder already cleared the stop strings, see §3.4). Visible
// stop ids and stop strings are taken as they are. SkipSpecialTokens
// defaults to true when absent.
func DecoderOptionsFor(req *backend.Request) DecoderOptions {
	sc := req.StopConditions
	o := DecoderOptions{
		PromptIDs:         req.TokenIDs,
		SkipSpecialTokens: true,
		Stop:              sc.Stop,
		VisibleStopIDs:    sc.StopTokenIDsVisible,
	}
	if v := req.OutputOptions.SkipSpecialTokens; v != nil {
		o.SkipSpecialTokens = *v
	}
	if v := req.SamplingOptions.IncludeStopStrInOutput; v != nil {
		o.IncludeStopStr = *v
	}
	if sc.MinTokens != nil {
		o.MinTokens = int(*sc.MinTokens)
	}
	if sc.IgnoreEOS == nil || !*sc.IgnoreEOS {
		o.HiddenStopIDs = stopIDUnion(sc.StopTokenIDsHidden, sc.StopTokenIDs, req.EOSTokenIDs)
	}
	return o
}

// stopIDUnion returns the distinct ids of lists, in order of first appearance.
func stopIDUnion(lists ...[]uint32) []uint32 {
	var out []uint32
	seen := map[uint32]bool{}
	for _, l := range lists {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// Delta is what the client sees of one engine output.
type Delta struct {
	// Text is the new visible text (may be "").
	Text string
	// TokenIDs are the ids of the output that were accepted (counted for
	// usage): up to and including a stop token, none after the choice ended.
	TokenIDs []uint32
	// LogProbs are aligned with TokenIDs when the engine sent them.
	LogProbs []float64
	// TopLogprobs are passed through from the output (cut like TokenIDs
	// when they are a JSON array longer than TokenIDs).
	TopLogprobs json.RawMessage
	// Finish is set on the step that ends the choice: the engine's reason,
	// or Kind FinishStop on a local stop.
	Finish *backend.FinishReason
	// StopReason is the matched stop string (string) or stop token id
	// (uint32) on a local stop, the engine's stop_reason (decoded the same
	// way) on an engine finish, else nil.
	StopReason any
	// StoppedLocally reports that the decoder ended the choice while the
	// engine had not: the caller must tell the engine to stop generating.
	StoppedLocally bool
	// Postprocessed marks a delta a worker made (backend.Output
	// Postprocessed): Text is content, Reasoning and ToolCalls are the
	// parsers' (the frontend's parsers do not run).
	Postprocessed bool
	// Reasoning is a postprocessed delta's reasoning text.
	Reasoning string
	// ToolCalls are a postprocessed delta's tool-call deltas.
	ToolCalls []backend.ToolCallDelta
}

// postprocessedDelta is the delta of an output a worker postprocessed:
// its parts as they are.
func postprocessedDelta(out *backend.Output) Delta {
	d := Delta{Postprocessed: true, TokenIDs: out.TokenIDs, LogProbs: out.LogProbs, TopLogprobs: out.TopLogprobs,
		ToolCalls: out.ToolCalls, StopReason: decodeStopReason(out.StopReason)}
	if out.Text != nil {
		d.Text = *out.Text
	}
	if out.ReasoningText != nil {
		d.Reasoning = *out.ReasoningText
	}
	if out.FinishReason != nil {
		f := *out.FinishReason
		d.Finish = &f
	}
	return d
}

// ErrNoDetokenizer ends a choice whose engine output carries token ids
// without their text when the model has no tokenizer to decode them (its
// card says postprocessing "engine": every output must carry the engine's
// text).
var ErrNoDetokenizer = errors.New("preprocessor: the engine sent token ids without their text, and this model has no tokenizer to decode them (its engine does the postprocessing)")

// Decoder turns one choice's engine outputs into client text: incremental
// detokenization, stop ids, min_tokens and the stop-string jail (§3.6). It
// is not safe for concurrent use.
type Decoder struct {
	stream    *tokenizer.DecodeStream // nil: no tokenizer, outputs carry text
	jail      *stopJail
	hidden    map[uint32]bool
	visible   map[uint32]bool
	minTokens int
	generated int
	done      bool
}

// NewDecoder returns a Decoder for one choice. tok is nil for a model
// without tokenizer: its outputs must then carry their text
// (backend.Output.Text), and a token id that would need decoding is an
// error wrapping ErrNoDetokenizer.
func NewDecoder(tok *tokenizer.Tokenizer, opts DecoderOptions) *Decoder {
	d := &Decoder{
		jail:      newStopJail(opts.Stop, opts.IncludeStopStr),
		hidden:    make(map[uint32]bool, len(opts.HiddenStopIDs)),
		visible:   make(map[uint32]bool, len(opts.VisibleStopIDs)),
		minTokens: opts.MinTokens,
	}
	if tok != nil {
		d.stream = tok.NewDecodeStream(opts.SkipSpecialTokens, opts.PromptIDs...)
	}
	for _, id := range opts.HiddenStopIDs {
		d.hidden[id] = true
	}
	for _, id := range opts.VisibleStopIDs {
		if !d.hidden[id] {
			d.visible[id] = true
		}
	}
	return d
}

// Done reports whether the choice has ended; later outputs are ignored
// (tokens the engine generated after a local stop).
func (d *Decoder) Done() bool { return d.done }

// Step consumes one engine output of this choice and returns what the
// client sees. Token ids are handled one by one: a hidden stop id ends the
// choice without its text (it wins over a stop string in the same step), a
// visible one ends it with its text, any other id is decoded and goes
// through the stop-string jail. When the output carries Text (the engine
// detokenized), that text goes through the jail instead of the decoded
// ids, and stop ids still end the choice after it. An engine finish flushes
// the jail. After the choice ended Step returns an empty Delta. A
// detokenization error ends the choice and is returned.
func (d *Decoder) Step(out *backend.Output) (Delta, error) {
	if d.done {
		return Delta{}, nil
	}
	var (
		delta    Delta
		accepted int
		err      error
	)
	if out.Text != nil {
		accepted = d.stepText(&delta, out)
	} else {
		accepted, err = d.stepIDs(&delta, out.TokenIDs)
		if err != nil {
			d.done = true
			return Delta{}, err
		}
	}
	accept(&delta, out, accepted)
	if d.done {
		delta.StoppedLocally = out.FinishReason == nil
		return delta, nil
	}
	if out.FinishReason != nil {
		delta.Text += d.jail.flush()
		f := *out.FinishReason
		delta.Finish = &f
		delta.StopReason = decodeStopReason(out.StopReason)
		d.done = true
	}
	return delta, nil
}

// stepIDs decodes ids into delta and returns how many were accepted.
func (d *Decoder) stepIDs(delta *Delta, ids []uint32) (int, error) {
	var buf [128]byte
	text := buf[:0]
	for i, id := range ids {
		d.generated++
		check := d.generated > d.minTokens
		if check && d.hidden[id] {
			d.stopOn(delta, id)
			delta.Text = string(text)
			return i + 1, nil
		}
		if d.stream == nil {
			return 0, fmt.Errorf("%w (token %d)", ErrNoDetokenizer, id)
		}
		piece, err := d.stream.Step(id)
		if err != nil {
			return 0, fmt.Errorf("preprocessor: detokenize token %d: %w", id, err)
		}
		if check && d.visible[id] {
			text = append(text, d.jail.flush()...)
			text = append(text, piece...)
			d.stopOn(delta, id)
			delta.Text = string(text)
			return i + 1, nil
		}
		emit, stop, matched := d.jail.push(piece, !check)
		text = append(text, emit...)
		if matched {
			d.stopOn(delta, stop)
			delta.Text = string(text)
			return i + 1, nil
		}
	}
	delta.Text = string(text)
	return len(ids), nil
}

// stepText handles an output whose text the engine detokenized. Its ids
// still count and stop, but cannot be aligned with the text, so the whole
// text goes through the jail first: a stop string in it still cuts it (and
// names the stop unless a stop id does), and on a stop id the rest of the
// jail is released. It returns how many ids were accepted.
func (d *Decoder) stepText(delta *Delta, out *backend.Output) int {
	accepted := len(out.TokenIDs)
	var idStop *uint32
	for i, id := range out.TokenIDs {
		d.generated++
		if d.generated > d.minTokens && (d.hidden[id] || d.visible[id]) {
			idStop, accepted = &id, i+1
			break
		}
	}
	emit, stop, matched := d.jail.push(*out.Text, d.generated <= d.minTokens)
	delta.Text = emit
	switch {
	case idStop != nil:
		if !matched {
			delta.Text += d.jail.flush()
		}
		d.stopOn(delta, *idStop)
	case matched:
		d.stopOn(delta, stop)
	}
	return accepted
}

// stopOn ends the choice locally for reason.
func (d *Decoder) stopOn(delta *Delta, reason any) {
	d.done = true
	delta.Finish = &backend.FinishReason{Kind: backend.FinishStop}
	delta.StopReason = reason
}

// accept copies the first n ids of out, with their log probabilities.
func accept(delta *Delta, out *backend.Output, n int) {
	if n == 0 {
		delta.TopLogprobs = out.TopLogprobs
		return
	}
	delta.TokenIDs = out.TokenIDs[:n:n]
	delta.LogProbs = out.LogProbs
	if len(delta.LogProbs) > n {
		delta.LogProbs = delta.LogProbs[:n:n]
	}
	delta.TopLogprobs = out.TopLogprobs
	if n < len(out.TokenIDs) && len(out.TopLogprobs) > 0 {
		var items []json.RawMessage
		if json.Unmarshal(out.TopLogprobs, &items) == nil && len(items) > n {
			if b, err := json.Marshal(items[:n]); err == nil {
				delta.TopLogprobs = b
			}
		}
	}
}

// decodeStopReason turns an engine's stop_reason into a string or uint32;
// anything else (absent, null, other shapes) gives nil.
func decodeStopReason(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var id uint32
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	return nil
}
