package backendtest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// stream is one Generate call running in its own goroutine, with
// everything the engine emitted, as it emitted it.
type stream struct {
	done chan struct{} // closed when Generate returned

	mu        sync.Mutex
	outputs   []*backend.Output // raw, violating ones included
	err       error             // what Generate returned (valid after done)
	violation error             // what ValidateStream reported, if anything
}

// startGenerate calls e.Generate(rc, req, …) in a new goroutine; the emit
// records each output and passes it through backend.ValidateStream.
func startGenerate(e backend.Engine, rc *runtime.Context, req *backend.Request) *stream {
	s := &stream{done: make(chan struct{})}
	checked, finish := backend.ValidateStream(func(*backend.Output) error { return nil }, backend.ValidateChoices(req), backend.ValidatePanic(false))
	emit := func(o *backend.Output) error {
		if o != nil {
			o = new(*o) // the engine may fill o again once emit returns
		}
		s.mu.Lock()
		s.outputs = append(s.outputs, o)
		s.mu.Unlock()
		return checked(o)
	}
	go func() {
		defer close(s.done)
		err := protect(func() error { return e.Generate(rc, req, emit) })
		verr := finish(err)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.err = err
		if errors.Is(verr, backend.ErrContractViolation) {
			s.violation = verr
		}
	}()
	return s
}

// wait reports whether Generate returned within d.
func (s *stream) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
		return true
	case <-t.C:
		return false
	}
}

// result returns the outputs so far, Generate's error and the validator's.
func (s *stream) result() ([]*backend.Output, error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*backend.Output(nil), s.outputs...), s.err, s.violation
}

// generate runs one stream of req to its end (at most limit) and returns
// the first contract failure, if any.
func generate(e backend.Engine, req *backend.Request, id string, limit time.Duration) (Failure, string) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	rc := runtime.NewContext(ctx, id)
	defer rc.Release()
	s := startGenerate(e, rc, req)
	if !s.wait(limit + time.Second) {
		return GenerateFailed, fmt.Sprintf("Generate did not return within %v", limit)
	}
	return analyse(s.result())
}

// analyse checks a finished stream against the contract and returns the
// first failure ("" if none) with an explanation.
func analyse(outs []*backend.Output, genErr, violation error) (Failure, string) {
	if genErr != nil && !errors.Is(genErr, backend.ErrContractViolation) {
		if len(outs) == 0 {
			return GenerateFailed, fmt.Sprintf("Generate returned %v", genErr)
		}
		return StreamYieldedError, fmt.Sprintf("Generate returned %v after %d outputs", genErr, len(outs))
	}
	if len(outs) == 0 {
		return NoChunksYielded, "Generate returned nil without emitting anything"
	}
	term, tokens := -1, 0
	for i, o := range outs {
		if o == nil {
			return ContractViolation, fmt.Sprintf("output #%d is nil", i+1)
		}
		if term >= 0 {
			return ChunkAfterTerminal, fmt.Sprintf("output #%d follows the terminal output #%d (%s)", i+1, term+1, outs[term].FinishReason)
		}
		tokens += len(o.TokenIDs)
		if o.IsTerminal() {
			term = i
		}
	}
	if term < 0 {
		return NoTerminalChunk, fmt.Sprintf("Generate returned nil after %d outputs, none terminal", len(outs))
	}
	if u := outs[term].CompletionUsage; u != nil && u.CompletionTokens != tokens {
		return CompletionTokensMismatch, fmt.Sprintf("the terminal reports completion_tokens %d, but the stream carried %d token ids", u.CompletionTokens, tokens)
	}
	if violation != nil {
		return ContractViolation, violation.Error()
	}
	return "", ""
}

// call runs f with a context that ends after limit, in its own goroutine so
// that a hung engine fails the check instead of the whole test binary. A
// panic becomes an error.
func call(limit time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- protect(func() error { return f(ctx) }) }()
	t := time.NewTimer(limit + time.Second)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("did not return within %v", limit)
	}
}

// protect calls f and turns a panic into an error.
func protect(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}
