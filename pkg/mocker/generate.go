package mocker

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// exitCode is what the exit fault passes to Config.Exit.
const exitCode = 1

// Generate runs one request: it queues the prompt on a rank's scheduler
// and emits one output per generated token as the scheduler produces
// them, then a terminal output with usage (FinishLength at max_tokens,
// which is capped at ContextLength minus the prompt and defaults to that
// or to what fits the KV cache if less; FinishEOS at an EOS or
// stop token id; FinishCancelled when the request is stopped or aborted).
// When the request is killed it returns the context's cause at once. The
// sequence's KV blocks are freed on every way out.
//
// A prefill engine generates one token and answers with a single output
// (see prefillAnswer); a decode engine takes a handed-over prompt's KV
// cache as transferred (see handedOver). Package doc: "Disaggregated
// serving".
func (e *Engine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	maxTokens, err := e.validate(req)
	if err != nil {
		return err
	}
	e.mu.Lock()
	running := e.running
	e.mu.Unlock()
	if !running {
		return fmt.Errorf("mocker: %w: engine not running", backend.ErrEngineShutdown)
	}
	prompt := len(req.TokenIDs)
	if e.cfg.DisaggregationMode == ModePrefill {
		if room, ok := e.bootstrapRoom(req); ok {
			// Decode engines waiting for this room hear of a failure at
			// once; a success was announced before the answer.
			defer e.boot.complete(room, false)
		}
	}
	handed := e.handedOver(req)
	if e.cfg.DisaggregationMode == ModeDecode && req.BootstrapInfo != nil {
		e.inflight.Add(1)
		err := waitForPrefill(ctx, req.BootstrapInfo, bootstrapTimeout, e.done)
		e.inflight.Add(-1)
		switch {
		case errors.Is(err, errWaitStopped):
			if err := emit(backend.Cancelled().WithUsage(prompt, 0)); err != nil {
				return fmt.Errorf("mocker: emit: %w", err)
			}
			return nil
		case err != nil:
			return err
		}
	}
	if maxTokens == 0 {
		out := backend.Length()
		if backend.IsStopped(ctx) {
			out = backend.Cancelled()
		}
		if err := emit(out.WithUsage(prompt, 0)); err != nil {
			return fmt.Errorf("mocker: emit: %w", err)
		}
		return nil
	}
	rk, err := e.pickRank(req)
	if err != nil {
		return err
	}

	seq := e.newSequence(req, maxTokens)
	if handed {
		seq.transferred = true
		seq.handedCached = handedCached(req)
	}
	e.inflight.Add(1)
	rk.load.Add(1)
	id := backend.RequestID(ctx)
	if id != "" {
		e.mu.Lock()
		e.requests[id] = &inflightReq{rank: rk, seq: seq}
		e.mu.Unlock()
	}
	defer func() {
		rk.remove(seq)
		if id != "" {
			e.mu.Lock()
			if r := e.requests[id]; r != nil && r.seq == seq {
				delete(e.requests, id)
			}
			e.mu.Unlock()
		}
		rk.load.Add(-1)
		e.inflight.Add(-1)
	}()
	rk.submit(seq)
	return e.stream(ctx, rk, seq, req, emit)
}

// stream forwards seq's tokens to emit until the sequence finishes or the
// request ends. A prefill engine holds the tokens back for its single
// answer.
func (e *Engine) stream(ctx context.Context, rk *rank, seq *sequence, req *backend.Request, emit func(*backend.Output) error) error {
	out := seq.out
	prompt := len(req.TokenIDs)
	prefill := e.cfg.DisaggregationMode == ModePrefill
	emitted := 0
	var held []uint32 // a prefill's tokens
	terminal := func(o *backend.Output) error {
		o.TokenIDs = append(o.TokenIDs, held...)
		o.WithUsage(prompt, emitted)
		o.CompletionUsage.PromptTokensDetails = &backend.PromptDetail{CachedTokens: out.cachedTokens()}
		if err := emit(o); err != nil {
			return fmt.Errorf("mocker: emit: %w", err)
		}
		return nil
	}
	var buf []uint32
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if backend.IsStopped(ctx) {
			rk.remove(seq)
			return terminal(backend.Cancelled())
		}
		var finish backend.FinishKind
		var msg string
		buf, finish, msg = out.take(buf)
		for _, tok := range buf {
			if prefill {
				held = append(held, tok)
			} else {
				o := backend.Tokens(tok)
				withLogprobs(o, req, e.cfg.OutputTokens, seq.seed, prompt+emitted, tok)
				if err := emit(o); err != nil {
					return fmt.Errorf("mocker: emit: %w", err)
				}
			}
			emitted++
			if n := e.cfg.ExitAfterTokens; n > 0 && e.emitted.Add(1) == int64(n) {
				e.cfg.Logger.Warn("mocker: exit fault", "tokens", n)
				e.cfg.Exit(exitCode)
			}
			if n := e.cfg.DropAfterTokens; n > 0 && emitted == n {
				return fmt.Errorf("mocker: drop fault after %d tokens: %w", n, backend.ErrDropStream)
			}
			if n := e.cfg.StallAfterTokens; n > 0 && emitted == n {
				return e.stall(ctx, rk, seq)
			}
		}
		if finish != "" {
			if finish == backend.FinishError {
				return terminal(backend.Failed(msg))
			}
			if prefill && finish != backend.FinishCancelled {
				return e.prefillAnswer(ctx, rk, req, backend.Finish(finish), terminal)
			}
			return terminal(backend.Finish(finish))
		}
		select {
		case <-out.ready:
		case <-ctx.Done():
		case <-backend.Stopped(ctx):
		case <-e.done:
			return fmt.Errorf("mocker: %w", backend.ErrEngineShutdown)
		}
	}
}

// stall is the stall fault: free the sequence and wait to be killed.
func (e *Engine) stall(ctx context.Context, rk *rank, seq *sequence) error {
	rk.remove(seq)
	e.cfg.Logger.Warn("mocker: stall fault", "tokens", e.cfg.StallAfterTokens)
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-e.done:
		return fmt.Errorf("mocker: %w", backend.ErrEngineShutdown)
	}
}

// validate checks a request and returns its max_tokens.
func (e *Engine) validate(req *backend.Request) (int, error) {
	c := &e.cfg
	n := len(req.TokenIDs)
	if n == 0 {
		return 0, fmt.Errorf("mocker: %w: empty token_ids", backend.ErrInvalidArgument)
	}
	if n > c.ContextLength {
		return 0, fmt.Errorf("mocker: %w: prompt has %d tokens, context length is %d",
			backend.ErrInvalidArgument, n, c.ContextLength)
	}
	// A sequence must fit the cache on its own, or preemption could not
	// make room for it. Without max_tokens it may grow until it fills the
	// context or the cache.
	room := min(c.ContextLength, c.NumGPUBlocks*c.BlockSize) - n
	if room < 0 {
		return 0, fmt.Errorf("mocker: %w: prompt has %d tokens, the KV cache holds %d",
			backend.ErrInvalidArgument, n, c.NumGPUBlocks*c.BlockSize)
	}
	maxTokens := min(req.MaxTokens(room), c.ContextLength-n)
	if c.DisaggregationMode == ModePrefill {
		// A prefill computes the prompt's KV cache and the first token,
		// whatever the request asks for.
		if room < 1 {
			return 0, fmt.Errorf("mocker: %w: prompt has %d tokens, no room for the first token (context length %d)",
				backend.ErrInvalidArgument, n, c.ContextLength)
		}
		maxTokens = 1
	}
	if maxTokens > room {
		return 0, fmt.Errorf("mocker: %w: prompt (%d) + max_tokens (%d) exceed the KV cache (%d tokens)",
			backend.ErrInvalidArgument, n, maxTokens, c.NumGPUBlocks*c.BlockSize)
	}
	return maxTokens, nil
}

// newSequence builds the scheduler's view of req.
func (e *Engine) newSequence(req *backend.Request, maxTokens int) *sequence {
	s := &sequence{
		out:       newStream(),
		tokens:    append(make([]uint32, 0, len(req.TokenIDs)+maxTokens), req.TokenIDs...),
		promptLen: len(req.TokenIDs),
		maxTokens: maxTokens,
		stop:      newStopSet(req),
		determ:    e.cfg.Deterministic,
		vocab:     e.cfg.OutputTokens,
	}
	if req.SamplingOptions.Seed != nil {
		s.seed = *req.SamplingOptions.Seed
	}
	if e.cfg.EnablePrefixCaching {
		s.extendHashes(e.cfg.BlockSize)
	}
	return s
}
