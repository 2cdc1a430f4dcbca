package preprocessor

import (
	"context"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Event is one item of a response stream: a chunk (Name empty) or a named
// annotation event. Data is JSON-encodable; an SSE writer sends
// "event: <Name>" (when set) and "data: <json>".
type Event struct {
	Name string
	Data any
	// Stats is set on chunk events: the accounting the HTTP layer's
	// metrics need (the reference system's internal llm_metrics).
	Stats *Stats
}

// Stats is the token accounting of one chunk event.
type Stats struct {
	// PromptTokens is the prompt length (all prompts of a batch).
	PromptTokens int
	// Tokens is the number of output tokens this chunk carries: the tokens
	// accepted since the previous chunk (a chunk may wait for the rest of
	// a character, so it can account for several).
	Tokens int
	// CachedTokens is the engine's count of prompt tokens served from its
	// cache, once known.
	CachedTokens *int
	// Placement is where the request's latest output came from (the
	// worker, and with KV routing its cached prefix), once known.
	Placement *backend.Placement
}

// Annotation event names (nvext.annotations).
const (
	EventRequestID       = "request_id"
	EventFormattedPrompt = "formatted_prompt"
	EventTokenIDs        = "token_ids"
)

// choice is the output-side state of one choice of one engine request.
type choice struct {
	dec      *Decoder
	index    int // OpenAI choice index
	roleSent bool
	done     bool
	tokens   int // completion tokens accepted
	offset   int // text emitted so far, in bytes (completions text_offset)
	// placement is where the choice's latest output came from.
	placement *backend.Placement
	// parser splits a chat choice's text into reasoning, content and
	// tool calls (nil: the text is content).
	parser *choiceParser
	// calls counts the tool calls a worker's postprocessed deltas began.
	calls int
	// heldLogprobs are the logprobs of tokens whose text is not shown yet
	// (half a character, text a parser holds back); they go out with the
	// next chunk.
	heldLogprobs []openai.TokenLogprob
}

// run sends prep to next and calls onDelta for each decoded delta, in
// order. A local stop (stop string, stop token) stops generation upstream
// and later tokens are ignored. It returns the engine's cached prompt
// tokens, if reported. An error finish or a stream that ends before every
// choice finished is an error.
func (m *Model) run(ctx context.Context, prep *Prepared, n int, next backend.Generator, onDelta func(c *choice, d Delta) error, onCached func(prep int, cached int)) (cached *int, err error) {
	rc, ok := runtime.FromContext(ctx)
	if !ok {
		rc = runtime.NewContext(ctx, "")
		defer rc.Release()
		ctx = rc
	}
	opts := DecoderOptionsFor(prep.Request)
	choices := map[uint32]*choice{}
	get := func(i uint32) *choice {
		c := choices[i]
		if c == nil {
			o := opts
			o.PromptIDs = prep.Request.TokenIDs
			c = &choice{dec: NewDecoder(m.tok, o), index: prep.Index*n + int(i)}
			choices[i] = c
		}
		return c
	}
	for i := 0; i < n; i++ {
		get(uint32(i))
	}
	err = next.Generate(ctx, prep.Request, func(out *backend.Output) error {
		var i uint32
		if out.Index != nil {
			i = *out.Index
		}
		if int(i) >= n {
			return fmt.Errorf("preprocessor: engine sent choice index %d for a request with n=%d", i, n)
		}
		if u := out.CompletionUsage; u != nil && u.PromptTokensDetails != nil {
			cached = &u.PromptTokensDetails.CachedTokens
			if onCached != nil {
				onCached(prep.Index, *cached)
			}
		}
		c := get(i)
		if out.Placement != nil {
			c.placement = out.Placement
		}
		if c.done {
			return nil // trailing tokens after a local stop
		}
		var d Delta
		if out.Postprocessed {
			d = postprocessedDelta(out) // the worker decoded, stopped and parsed
		} else if d, err = c.dec.Step(out); err != nil {
			return err
		}
		c.tokens += len(d.TokenIDs)
		if d.StoppedLocally {
			allDone := true
			for _, o := range choices {
				if o != c && !o.done {
					allDone = false
				}
			}
			if allDone {
				rc.StopGenerating()
			}
		}
		if d.Finish != nil {
			c.done = true
			if d.Finish.Kind == backend.FinishError {
				return &runtime.Error{Type: runtime.TypeUnknown, Message: d.Finish.Message}
			}
		}
		return onDelta(c, d)
	})
	if err != nil {
		return cached, err
	}
	for _, c := range choices {
		if !c.done {
			return cached, runtime.NewError(runtime.TypeStreamIncomplete, "the engine stream ended without a finish reason")
		}
	}
	return cached, nil
}
