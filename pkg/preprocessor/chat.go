package preprocessor

import (
	"context"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// Chat serves one chat completions request as a stream of events: the
// annotations nvext asks for (request_id, formatted_prompt, token_ids),
// then chat.completion.chunk objects — the role on each choice's first
// chunk, content deltas, the finish reason on the last chunk — and, with
// stream_options.include_usage, a final chunk with empty choices and the
// usage. id is the request id; response ids are "chatcmpl-<id>".
//
// An error before anything was emitted (validation, template, prompt too
// long, no worker) is returned with no event sent; an error after that
// ends the stream and is returned too.
//
// A chunk event's Data and Stats are Chat's until emit returns: it fills
// the same chunk, choice and stats for the next token, the delta's
// content and reasoning pointers included. A consumer that keeps a chunk
// copies what it keeps; strings, usage and finish reasons are never
// reused.
func (m *Model) Chat(ctx context.Context, id string, req *openai.ChatCompletionRequest, next backend.Generator, emit func(Event) error) error {
	prep, err := m.prepareChat(ctx, req)
	if err != nil {
		return err
	}
	return m.streamChat(ctx, id, req, prep, next, req.IncludeUsage(), emit)
}

// ChatUnary serves a non-streaming chat request: the same stream folded
// into one chat.completion, usage always included.
func (m *Model) ChatUnary(ctx context.Context, id string, req *openai.ChatCompletionRequest, next backend.Generator) (*openai.ChatCompletion, error) {
	prep, err := m.prepareChat(ctx, req)
	if err != nil {
		return nil, err
	}
	var acc ChatAccumulator
	err = m.streamChat(ctx, id, req, prep, next, true, func(ev Event) error {
		if c, ok := ev.Data.(*openai.ChatCompletionChunk); ok && ev.Name == "" {
			acc.Add(c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return acc.Result(), nil
}

func (m *Model) streamChat(ctx context.Context, id string, req *openai.ChatCompletionRequest, prep *Prepared, next backend.Generator, usage bool, emit func(Event) error) error {
	if err := annotate(id, req.NvExt, prep, emit); err != nil {
		return err
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	continuous := req.StreamOptions != nil && req.StreamOptions.ContinuousUsageStats
	base := openai.ChatCompletionChunk{
		ID:      "chatcmpl-" + id,
		Object:  openai.ObjectChatCompletionChunk,
		Created: m.clock().Unix(),
		Model:   req.Model,
	}
	promptTokens := len(prep.Request.TokenIDs)
	completion, pending := 0, 0
	var cachedNow *int
	var chatLP chatLogprobs
	wantLP := prep.Request.OutputOptions.Logprobs != nil
	plan := m.planOutput(req)
	// One chunk for the stream, filled anew for each event (Chat's
	// contract): a token costs no chunk, choice or stats allocation.
	var (
		chunk   openai.ChatCompletionChunk
		choices [1]openai.ChatChunkChoice
		st      Stats
		text    [2]string // the delta's reasoning and content
		one     [1]parsed
	)
	cached, err := m.run(ctx, prep, n, next, func(c *choice, d Delta) error {
		completion += len(d.TokenIDs)
		pending += len(d.TokenIDs)
		var parts []parsed
		switch {
		case d.Postprocessed:
			// The worker ran the output side: its deltas are shown as
			// they are (postprocess.go).
			p := parsed{reasoning: d.Reasoning, content: d.Text}
			for _, tc := range d.ToolCalls {
				p.calls = append(p.calls, toolcall.CallDelta{Index: tc.Index, Name: tc.Name, ID: tc.ID, Arguments: tc.Arguments})
				if tc.Name != "" {
					c.calls++
				}
			}
			parts = nonEmpty(one[:0], p)
		case plan == nil:
			parts = nonEmpty(one[:0], parsed{content: d.Text})
		default:
			if c.parser == nil {
				c.parser = newChoiceParser(plan)
			}
			parts = c.parser.step(d.Text, d.Finish != nil)
		}
		var lp *openai.ChatLogprobs
		if wantLP {
			lp = chatLP.convert(m, d)
		}
		if len(parts) == 0 {
			if d.Finish == nil {
				// Nothing a client can see yet (half a character, text a
				// parser holds back): its logprobs wait for the next chunk.
				if lp != nil {
					c.heldLogprobs = append(c.heldLogprobs, lp.Content...)
				}
				return nil
			}
			parts = []parsed{{}} // the finish reason alone
		}
		for k, part := range parts {
			ch := openai.ChatChunkChoice{Index: c.index}
			if !c.roleSent {
				ch.Delta.Role = "assistant"
				c.roleSent = true
			}
			text[0], text[1] = part.reasoning, part.content
			if part.reasoning != "" {
				ch.Delta.ReasoningContent = &text[0]
			}
			if part.content != "" {
				ch.Delta.Content = &text[1]
			}
			setCalls(&ch.Delta, part.calls, plan)
			if d.Finish != nil && k == len(parts)-1 {
				ch.FinishReason = finishReason(d.Finish)
				if stop, ok := d.StopReason.(string); ok {
					ch.MatchedStop = stop
				}
				if (c.calls > 0 || c.parser != nil && c.parser.called > 0) && d.Finish.Kind != backend.FinishLength {
					ch.FinishReason = callFinish(plan)
				}
			}
			if k == 0 && wantLP && (lp != nil || len(c.heldLogprobs) > 0) {
				if lp == nil {
					lp = &openai.ChatLogprobs{}
				}
				lp.Content = append(c.heldLogprobs, lp.Content...)
				c.heldLogprobs = nil
				ch.Logprobs = lp
			}
			chunk = base
			choices[0] = ch
			chunk.Choices = choices[:]
			if continuous {
				chunk.Usage = &openai.Usage{PromptTokens: promptTokens, CompletionTokens: completion, TotalTokens: promptTokens + completion}
			}
			st = Stats{PromptTokens: promptTokens, Tokens: pending, CachedTokens: cachedNow, Placement: c.placement}
			pending = 0
			if err := emit(Event{Data: &chunk, Stats: &st}); err != nil {
				return err
			}
		}
		return nil
	}, func(_ int, c int) { cachedNow = &c })
	if err != nil {
		return err
	}
	if usage {
		chunk := base
		chunk.Choices = []openai.ChatChunkChoice{}
		chunk.Usage = usageOf(promptTokens, completion, cached)
		return emit(Event{Data: &chunk, Stats: &Stats{PromptTokens: promptTokens, Tokens: pending, CachedTokens: cached}})
	}
	return nil
}

// setCalls puts a chunk's tool-call deltas on delta: as tool_calls, or
// for a request that used the deprecated functions API as function_call
// (the first call's; that API had one).
func setCalls(delta *openai.ChatDelta, calls []toolcall.CallDelta, plan *outputPlan) {
	if len(calls) == 0 {
		return
	}
	if plan == nil || !plan.legacy {
		delta.ToolCalls = toolCalls(calls)
		return
	}
	for _, tc := range toolCalls(calls) {
		if *tc.Index == 0 {
			f := tc.Function
			delta.FunctionCall = &f
		}
	}
}

// callFinish is the finish reason of a choice that called tools.
func callFinish(plan *outputPlan) *string {
	s := openai.FinishToolCalls
	if plan != nil && plan.legacy {
		s = openai.FinishFunctionCall
	}
	return &s
}

// annotate sends the annotation events nvext asks for, before generation.
func annotate(id string, nv *openai.NvExt, prep *Prepared, emit func(Event) error) error {
	if nv.HasAnnotation(openai.AnnotationRequestID) {
		if err := emit(Event{Name: EventRequestID, Data: id}); err != nil {
			return err
		}
	}
	if nv.HasAnnotation(openai.AnnotationFormattedPrompt) {
		if err := emit(Event{Name: EventFormattedPrompt, Data: prep.Prompt}); err != nil {
			return err
		}
	}
	if nv.HasAnnotation(openai.AnnotationTokenIDs) {
		if err := emit(Event{Name: EventTokenIDs, Data: prep.Request.TokenIDs}); err != nil {
			return err
		}
	}
	return nil
}

// finishReason maps an engine finish to OpenAI's spelling.
func finishReason(f *backend.FinishReason) *string {
	var s string
	switch f.Kind {
	case backend.FinishLength:
		s = openai.FinishLength
	case backend.FinishContentFilter:
		s = openai.FinishContentFilter
	default: // eos, stop, cancelled
		s = openai.FinishStop
	}
	return &s
}

func usageOf(prompt, completion int, cached *int) *openai.Usage {
	u := &openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	if cached != nil {
		u.PromptTokensDetails = &openai.PromptDetail{CachedTokens: *cached}
	}
	return u
}
