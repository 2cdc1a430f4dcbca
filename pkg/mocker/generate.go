package mocker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// exitCode is what the exit fault passes to Config.Exit.
const exitCode = 1

// Generate runs one request: it queues the prompt on a rank's scheduler
// and emits the generated tokens as the scheduler produces them (those
// produced while emit was busy in one output), then a terminal output
// with usage (FinishLength at max_tokens,
// which is capped at ContextLength minus the prompt and defaults to that
// or to what fits the KV cache if less; FinishEOS at an EOS or
// stop token id; FinishCancelled when the request is stopped or aborted).
// When the request is killed it returns the context's cause at once. The
// sequence's KV blocks are freed on every way out.
//
// A request with sampling_options.n = k > 1 (at most MaxChoices) runs k
// sequences of the same prompt (see ChoiceSeed), each a running sequence
// of its own that shares the prompt's blocks through prefix caching.
// Every output then carries its choice's Index and each choice ends with
// its own terminal output, whose usage counts that choice's tokens; a
// stop ends every choice still running with FinishCancelled.
//
// With Config.Script, a choice the script answers emits exactly its ids
// (see Config.Script).
//
// An embedding request (req.Embedding) gets one output: see embed.
//
// A prefill engine generates one token and answers with a single output
// (see prefillAnswer), whatever n is; a decode engine takes a handed-over
// prompt's KV cache as transferred (see handedOver). Package doc:
// "Disaggregated serving".
func (e *Engine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if req.Embedding != nil {
		return e.embed(ctx, req, emit)
	}
	maxTokens, n, err := e.validate(req)
	if err != nil {
		return err
	}
	if err := e.checkLora(req); err != nil {
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
			return emitAll(emit, n, prompt, backend.FinishCancelled)
		case err != nil:
			return err
		}
	}
	if maxTokens == 0 {
		kind := backend.FinishLength
		if backend.IsStopped(ctx) {
			kind = backend.FinishCancelled
		}
		return emitAll(emit, n, prompt, kind)
	}
	rk, err := e.pickRank(req)
	if err != nil {
		return err
	}

	seqs := e.newChoices(req, maxTokens, n)
	for _, seq := range seqs {
		if handed {
			seq.transferred = true
			seq.handedCached = handedCached(req)
		}
	}
	e.inflight.Add(1)
	rk.load.Add(1)
	id := backend.RequestID(ctx)
	if id != "" {
		e.mu.Lock()
		e.requests[id] = &inflightReq{rank: rk, seqs: seqs}
		e.mu.Unlock()
	}
	defer func() {
		for _, seq := range seqs {
			rk.remove(seq)
		}
		if id != "" {
			e.mu.Lock()
			if r := e.requests[id]; r != nil && r.seqs[0] == seqs[0] {
				delete(e.requests, id)
			}
			e.mu.Unlock()
		}
		rk.load.Add(-1)
		e.inflight.Add(-1)
	}()
	rk.submit(seqs...)
	return e.stream(ctx, rk, seqs, req, emit)
}

// emitAll ends a request's n choices at once, each with a terminal output
// of kind and no tokens.
func emitAll(emit func(*backend.Output) error, n, prompt int, kind backend.FinishKind) error {
	for i := range n {
		o := backend.Finish(kind).WithUsage(prompt, 0)
		o.Index = choiceIndex(n, i)
		if err := emit(o); err != nil {
			return fmt.Errorf("mocker: emit: %w", err)
		}
	}
	return nil
}

// choiceIndex is the Index of choice i's outputs: nil when n is 1, so a
// request without n gets the outputs it always got.
func choiceIndex(n, i int) *uint32 {
	if n <= 1 {
		return nil
	}
	return backend.Ptr(uint32(i))
}

// choiceRun is the Generate side of one choice.
type choiceRun struct {
	seq     *sequence
	index   *uint32
	emitted int      // tokens emitted (or held)
	held    []uint32 // a prefill's tokens
	done    bool     // its terminal output was emitted
}

// stream forwards the choices' tokens to emit until every choice has
// finished or the request ends. A prefill engine holds the tokens back
// for its single answer.
func (e *Engine) stream(ctx context.Context, rk *rank, seqs []*sequence, req *backend.Request, emit func(*backend.Output) error) error {
	prompt := len(req.TokenIDs)
	prefill := e.cfg.DisaggregationMode == ModePrefill
	runs := make([]*choiceRun, len(seqs))
	for i, seq := range seqs {
		runs[i] = &choiceRun{seq: seq, index: choiceIndex(len(seqs), i)}
	}
	left := len(runs)
	emitted := 0 // tokens emitted over all choices (faults)
	// cached is the request's prefix-cache hit: its first choice's.
	cached := seqs[0].out
	terminal := func(c *choiceRun, o *backend.Output) error {
		o.TokenIDs = append(o.TokenIDs, c.held...)
		o.Index = c.index
		o.WithUsage(prompt, c.emitted)
		o.CompletionUsage.PromptTokensDetails = &backend.PromptDetail{CachedTokens: cached.cachedTokens()}
		c.done = true
		left--
		if err := emit(o); err != nil {
			return fmt.Errorf("mocker: emit: %w", err)
		}
		return nil
	}
	// Tokens the scheduler produced since this stream last looked leave as
	// one output, as vLLM's output collector merges a request's deltas
	// when its consumer falls behind: one frame, one decode, one chunk
	// for the client, instead of one per token. At real step times a
	// stream finds one token at a time and nothing changes. Logprobs, the
	// token-counting faults and Config.OutputPerToken keep one output per
	// token.
	merge := !prefill && req.OutputOptions.Logprobs == nil && !e.cfg.OutputPerToken &&
		e.cfg.ExitAfterTokens == 0 && e.cfg.DropAfterTokens == 0 && e.cfg.StallAfterTokens == 0
	var buf []uint32
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if backend.IsStopped(ctx) {
			for _, c := range runs {
				if c.done {
					continue
				}
				rk.remove(c.seq)
				if err := terminal(c, backend.Cancelled()); err != nil {
					return err
				}
			}
			return nil
		}
		for _, c := range runs {
			if c.done {
				continue
			}
			var finish backend.FinishKind
			var msg string
			buf, finish, msg = c.seq.out.take(buf)
			if merge && len(buf) > 1 {
				o := backend.Tokens(slices.Clone(buf)...)
				o.Index = c.index
				if err := emit(o); err != nil {
					return fmt.Errorf("mocker: emit: %w", err)
				}
				c.emitted += len(buf)
				emitted += len(buf)
				buf = buf[:0]
			}
			for _, tok := range buf {
				if prefill {
					c.held = append(c.held, tok)
				} else {
					o := backend.Tokens(tok)
					o.Index = c.index
					withLogprobs(o, req, e.cfg.OutputTokens, c.seq.seed, prompt+c.emitted, tok)
					if err := emit(o); err != nil {
						return fmt.Errorf("mocker: emit: %w", err)
					}
				}
				c.emitted++
				emitted++
				if n := e.cfg.ExitAfterTokens; n > 0 && e.emitted.Add(1) == int64(n) {
					e.cfg.Logger.Warn("mocker: exit fault", "tokens", n)
					e.cfg.Exit(exitCode)
				}
				if n := e.cfg.DropAfterTokens; n > 0 && emitted == n {
					return fmt.Errorf("mocker: drop fault after %d tokens: %w", n, backend.ErrDropStream)
				}
				if n := e.cfg.StallAfterTokens; n > 0 && emitted == n {
					return e.stall(ctx, rk, seqs)
				}
			}
			var err error
			switch {
			case finish == "":
			case finish == backend.FinishError:
				err = terminal(c, backend.Failed(msg))
			case prefill && finish != backend.FinishCancelled:
				return e.prefillAnswer(ctx, rk, req, backend.Finish(finish), func(o *backend.Output) error { return terminal(c, o) })
			default:
				err = terminal(c, backend.Finish(finish))
			}
			if err != nil {
				return err
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-seqs[0].out.ready:
		case <-ctx.Done():
		case <-backend.Stopped(ctx):
		case <-e.done:
			return fmt.Errorf("mocker: %w", backend.ErrEngineShutdown)
		}
	}
}

// stall is the stall fault: free the sequences and wait to be killed.
func (e *Engine) stall(ctx context.Context, rk *rank, seqs []*sequence) error {
	for _, seq := range seqs {
		rk.remove(seq)
	}
	e.cfg.Logger.Warn("mocker: stall fault", "tokens", e.cfg.StallAfterTokens)
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-e.done:
		return fmt.Errorf("mocker: %w", backend.ErrEngineShutdown)
	}
}

// MaxChoices is the largest sampling_options.n the engine serves.
const MaxChoices = 128

// validate checks a request and returns its max_tokens and its number of
// choices (1 for a prefill engine, which answers once).
func (e *Engine) validate(req *backend.Request) (maxTokens, choices int, err error) {
	c := &e.cfg
	n := len(req.TokenIDs)
	if n == 0 {
		return 0, 0, fmt.Errorf("mocker: %w: empty token_ids", backend.ErrInvalidArgument)
	}
	if n > c.ContextLength {
		return 0, 0, fmt.Errorf("mocker: %w: prompt has %d tokens, context length is %d",
			backend.ErrInvalidArgument, n, c.ContextLength)
	}
	choices = 1
	if p := req.SamplingOptions.N; p != nil {
		if *p < 1 || *p > MaxChoices {
			return 0, 0, fmt.Errorf("mocker: %w: n = %d, want 1..%d", backend.ErrInvalidArgument, *p, MaxChoices)
		}
		choices = *p
	}
	// A sequence must fit the cache on its own, or preemption could not
	// make room for it. Without max_tokens it may grow until it fills the
	// context or the cache.
	room := min(c.ContextLength, c.NumGPUBlocks*c.BlockSize) - n
	if room < 0 {
		return 0, 0, fmt.Errorf("mocker: %w: prompt has %d tokens, the KV cache holds %d",
			backend.ErrInvalidArgument, n, c.NumGPUBlocks*c.BlockSize)
	}
	maxTokens = min(req.MaxTokens(room), c.ContextLength-n)
	if c.DisaggregationMode == ModePrefill {
		// A prefill computes the prompt's KV cache and the first token,
		// whatever the request asks for.
		if room < 1 {
			return 0, 0, fmt.Errorf("mocker: %w: prompt has %d tokens, no room for the first token (context length %d)",
				backend.ErrInvalidArgument, n, c.ContextLength)
		}
		maxTokens, choices = 1, 1
	}
	if maxTokens > room {
		return 0, 0, fmt.Errorf("mocker: %w: prompt (%d) + max_tokens (%d) exceed the KV cache (%d tokens)",
			backend.ErrInvalidArgument, n, maxTokens, c.NumGPUBlocks*c.BlockSize)
	}
	return maxTokens, choices, nil
}

// newSequence builds the scheduler's view of req (its choice 0).
func (e *Engine) newSequence(req *backend.Request, maxTokens int) *sequence {
	return e.newChoice(req, maxTokens, 0, newStream())
}

// newChoices builds the sequences of req's n choices, whose streams share
// one ready channel; choices after the first lead to the first.
func (e *Engine) newChoices(req *backend.Request, maxTokens, n int) []*sequence {
	ready := make(chan struct{}, 1)
	seqs := make([]*sequence, n)
	for i := range seqs {
		seqs[i] = e.newChoice(req, maxTokens, i, newStreamOn(ready))
		if i > 0 {
			seqs[i].lead = seqs[0]
		}
	}
	return seqs
}

// newChoice builds the sequence of choice i of req, streaming to out.
func (e *Engine) newChoice(req *backend.Request, maxTokens, i int, out *stream) *sequence {
	s := &sequence{
		out:       out,
		tokens:    append(make([]uint32, 0, len(req.TokenIDs)+maxTokens), req.TokenIDs...),
		promptLen: len(req.TokenIDs),
		maxTokens: maxTokens,
		stop:      newStopSet(req),
		determ:    e.cfg.Deterministic,
		vocab:     e.cfg.OutputTokens,
		choice:    i,
		lora:      loraName(req),
		hashSeed:  LoraHashSeed(loraName(req)),
	}
	if req.SamplingOptions.Seed != nil {
		s.seed = *req.SamplingOptions.Seed
	}
	s.seed = ChoiceSeed(LoraSeed(s.seed, loraName(req)), i)
	if e.cfg.Script != nil {
		if ids, ok := e.cfg.Script(req, i); ok {
			s.script, s.scripted = ids, true
		}
	}
	if e.cfg.EnablePrefixCaching {
		s.extendHashes(e.cfg.BlockSize)
	}
	return s
}
