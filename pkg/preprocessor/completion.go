package preprocessor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Complete serves one completions request as a stream of events, like
// Chat: annotations, then text_completion chunks and, with
// stream_options.include_usage, a usage chunk with empty choices. A batch
// of prompts fans out into one engine request per prompt (request ids
// "<id>-<i>"), run concurrently; their chunks are merged and choice i of
// prompt p gets index p*n+i.
func (m *Model) Complete(ctx context.Context, id string, req *openai.CompletionRequest, next backend.Generator, emit func(Event) error) error {
	preps, err := m.prepareCompletion(ctx, req)
	if err != nil {
		return err
	}
	return m.streamCompletion(ctx, id, req, preps, next, req.IncludeUsage(), emit)
}

// CompleteUnary serves a non-streaming completions request: the stream
// folded into one text_completion, usage always included.
func (m *Model) CompleteUnary(ctx context.Context, id string, req *openai.CompletionRequest, next backend.Generator) (*openai.Completion, error) {
	preps, err := m.prepareCompletion(ctx, req)
	if err != nil {
		return nil, err
	}
	var acc CompletionAccumulator
	err = m.streamCompletion(ctx, id, req, preps, next, true, func(ev Event) error {
		if c, ok := ev.Data.(*openai.Completion); ok && ev.Name == "" {
			acc.Add(c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return acc.Result(), nil
}

func (m *Model) streamCompletion(ctx context.Context, id string, req *openai.CompletionRequest, preps []*Prepared, next backend.Generator, usage bool, emit func(Event) error) error {
	for _, p := range preps {
		if err := annotate(id, req.NvExt, p, emit); err != nil {
			return err
		}
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	continuous := req.StreamOptions != nil && req.StreamOptions.ContinuousUsageStats
	base := openai.Completion{
		ID:      "cmpl-" + id,
		Object:  openai.ObjectTextCompletion,
		Created: m.clock().Unix(),
		Model:   req.Model,
	}
	wantLP := req.Logprobs != nil && *req.Logprobs > 0

	var (
		mu                 sync.Mutex // serialises emit and the counters
		prompt, completion int
		pending            int
		cachedSum          *int
		emitErr            error
	)
	for _, p := range preps {
		prompt += len(p.Request.TokenIDs)
	}
	onDelta := func(c *choice, d Delta) error {
		mu.Lock()
		defer mu.Unlock()
		if emitErr != nil {
			return emitErr
		}
		completion += len(d.TokenIDs)
		pending += len(d.TokenIDs)
		if d.Text == "" && d.Finish == nil {
			return nil
		}
		ch := openai.CompletionChoice{Index: c.index, Text: d.Text}
		if d.Finish != nil {
			ch.FinishReason = finishReason(d.Finish)
		}
		if wantLP {
			ch.Logprobs = m.completionLogprobs(d, c.offset)
		}
		c.offset += len(d.Text)
		chunk := base
		chunk.Choices = []openai.CompletionChoice{ch}
		if continuous {
			chunk.Usage = &openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
		}
		st := &Stats{PromptTokens: prompt, Tokens: pending, CachedTokens: cachedSum, Placement: c.placement}
		pending = 0
		emitErr = emit(Event{Data: &chunk, Stats: st})
		return emitErr
	}
	cachedBy := map[int]int{} // prompt index -> the engine's latest count
	addCached := func(prep, c int) {
		mu.Lock()
		defer mu.Unlock()
		cachedBy[prep] = c
		sum := 0
		for _, v := range cachedBy {
			sum += v
		}
		cachedSum = &sum
	}

	if len(preps) == 1 {
		if _, err := m.run(ctx, preps[0], n, next, onDelta, addCached); err != nil {
			return err
		}
	} else if err := m.fanOut(ctx, id, preps, n, next, onDelta, addCached); err != nil {
		return err
	}
	if usage {
		chunk := base
		chunk.Choices = []openai.CompletionChoice{}
		chunk.Usage = usageOf(prompt, completion, cachedSum)
		return emit(Event{Data: &chunk, Stats: &Stats{PromptTokens: prompt, Tokens: pending, CachedTokens: cachedSum}})
	}
	return nil
}

// fanOut runs one engine request per prompt concurrently, each under its
// own request context "<id>-<i>" linked to the parent, and waits for all.
// The first failure kills the others.
func (m *Model) fanOut(ctx context.Context, id string, preps []*Prepared, n int, next backend.Generator, onDelta func(*choice, Delta) error, addCached func(int, int)) error {
	parent, hasParent := runtime.FromContext(ctx)
	errs := make([]error, len(preps))
	subs := make([]*runtime.Context, len(preps))
	for i := range preps {
		subs[i] = runtime.NewContext(ctx, fmt.Sprintf("%s-%d", id, i))
		if hasParent {
			parent.LinkChild(subs[i])
		}
	}
	var wg sync.WaitGroup
	for i, p := range preps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer subs[i].Release()
			_, err := m.run(subs[i], p, n, next, onDelta, addCached)
			if err != nil {
				errs[i] = err
				for _, s := range subs {
					s.Kill()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !isKilledByPeer(err) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// isKilledByPeer reports an error that is only the echo of a sibling's
// failure (its context was killed), so the root cause is reported first.
func isKilledByPeer(err error) bool {
	return errors.Is(err, runtime.ErrKilled) || errors.Is(err, runtime.ErrCancelled) || errors.Is(err, context.Canceled)
}
