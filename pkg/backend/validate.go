package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrContractViolation is wrapped by every error ValidateStream reports: the
// engine broke the stream contract (see Engine.Generate). It is a bug in the
// engine, not a failure of the request.
var ErrContractViolation = errors.New("backend: stream contract violation")

// PanicOnViolation makes every stream validator panic on the first
// violation, in addition to returning the error, so the engine's goroutine
// shows up in the stack trace. It is true in builds with the dynamo_debug
// tag (go build -tags dynamo_debug) and false otherwise. Set it only at
// program start; ValidatePanic overrides it for one stream.
var PanicOnViolation bool

// ValidateOption adjusts one stream validator.
type ValidateOption func(*streamValidator)

// ValidateStop makes the validator require a FinishCancelled terminal if the
// request of ctx is already stopped (or killed) when ValidateStream is
// called. A stop that arrives later races with the engine's own finish and
// is not checked. An error returned by Generate is still allowed.
func ValidateStop(ctx context.Context) ValidateOption {
	return func(v *streamValidator) {
		v.stoppedAtStart = IsStopped(ctx)
		v.requestID = RequestID(ctx)
	}
}

// ValidateChoices makes the validator expect the choices of req: with
// sampling_options.n = k > 1 every output belongs to the choice its Index
// names (no Index: choice 0) and each of the k choices ends with its own
// terminal output; the stream ends after the last of them. Without it, or
// with n absent or 1, the stream is one choice and Index is not checked.
func ValidateChoices(req *Request) ValidateOption {
	return func(v *streamValidator) {
		if req != nil && req.SamplingOptions.N != nil && *req.SamplingOptions.N > 1 {
			v.choices = *req.SamplingOptions.N
		}
	}
}

// ValidatePanic overrides PanicOnViolation for one stream.
func ValidatePanic(on bool) ValidateOption {
	return func(v *streamValidator) { v.panics = on }
}

// ValidateStream wraps emit, an engine's emit function, with a checker of
// the stream contract. Pass checked to Engine.Generate, then pass what
// Generate returned to done and use done's result instead:
//
//	checked, done := backend.ValidateStream(emit, backend.ValidateStop(ctx))
//	err := done(engine.Generate(ctx, req, checked))
//
// These are violations:
//   - a nil output;
//   - an output after the terminal output, or after Generate returned;
//   - a terminal with CompletionUsage whose CompletionTokens differs from the
//     number of token ids emitted in total (terminal included);
//   - with ValidateStop, a stopped request whose terminal is not
//     FinishCancelled;
//   - Generate returning nil without a terminal output;
//   - Generate returning an error after a terminal output that emit
//     accepted (the terminal already ended the stream).
//
// With ValidateChoices for a request of n > 1 choices, "the terminal
// output" is each choice's own (usage counts that choice's token ids), the
// stream ends after all n, and an output whose Index is n or more is a
// violation.
//
// On a violation, checked does not forward the output and returns an error
// wrapping ErrContractViolation (the engine must stop and return it), and
// done returns the first violation (joined with Generate's error, if any).
// With PanicOnViolation or ValidatePanic(true) the validator panics instead.
// Otherwise checked forwards to emit and done returns genErr unchanged.
//
// checked may be called from any goroutine but not concurrently with itself
// (the contract allows one emitter per stream); done must be called once.
func ValidateStream(emit func(*Output) error, opts ...ValidateOption) (checked func(*Output) error, done func(genErr error) error) {
	v := &streamValidator{emit: emit, panics: PanicOnViolation}
	for _, o := range opts {
		o(v)
	}
	return v.check, v.done
}

// streamValidator is the state of one validated stream.
type streamValidator struct {
	emit           func(*Output) error
	panics         bool
	stoppedAtStart bool
	requestID      string

	choices int // > 1: the request's n (ValidateChoices)

	mu         sync.Mutex
	outputs    int   // outputs seen, violating ones included
	tokens     int   // token ids forwarded (without choices)
	terminal   bool  // a terminal output was forwarded (for every choice)
	emitFailed bool  // the downstream emit returned an error
	returned   bool  // done was called
	violation  error // the first violation

	// With choices: per choice, token ids forwarded and whether its
	// terminal was; ended counts the choices that ended.
	choiceTokens []int
	choiceEnded  []bool
	ended        int
}

func (v *streamValidator) check(o *Output) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.outputs++
	n := v.outputs
	switch {
	case v.returned:
		return v.violate("output #%d after Generate returned", n)
	case o == nil:
		return v.violate("output #%d is nil", n)
	case v.terminal && v.choices > 1:
		return v.violate("output #%d after the terminal output of every choice (n=%d)", n, v.choices)
	case v.terminal:
		return v.violate("output #%d after the terminal output", n)
	}
	if v.choices > 1 {
		return v.checkChoice(o, n)
	}
	tokens := v.tokens + len(o.TokenIDs)
	if o.IsTerminal() {
		if u := o.CompletionUsage; u != nil && u.CompletionTokens != tokens {
			return v.violate("terminal output #%d reports completion_tokens %d, but %d token ids were emitted", n, u.CompletionTokens, tokens)
		}
		if v.stoppedAtStart && o.FinishReason.Kind != FinishCancelled {
			return v.violate("terminal output #%d of a stopped request has finish reason %q, want %q", n, o.FinishReason, FinishCancelled)
		}
		v.terminal = true
	}
	v.tokens = tokens
	err := v.emit(o)
	if err != nil {
		v.emitFailed = true
	}
	return err
}

// checkChoice checks output #n of a stream of several choices. The caller
// holds v.mu.
func (v *streamValidator) checkChoice(o *Output, n int) error {
	if v.choiceTokens == nil {
		v.choiceTokens, v.choiceEnded = make([]int, v.choices), make([]bool, v.choices)
	}
	i := 0
	if o.Index != nil {
		if int64(*o.Index) >= int64(v.choices) {
			return v.violate("output #%d has choice index %d, the request has n=%d", n, *o.Index, v.choices)
		}
		i = int(*o.Index)
	}
	if v.choiceEnded[i] {
		return v.violate("output #%d after the terminal output of choice %d", n, i)
	}
	tokens := v.choiceTokens[i] + len(o.TokenIDs)
	if o.IsTerminal() {
		if u := o.CompletionUsage; u != nil && u.CompletionTokens != tokens {
			return v.violate("terminal output #%d of choice %d reports completion_tokens %d, but %d token ids were emitted for it", n, i, u.CompletionTokens, tokens)
		}
		if v.stoppedAtStart && o.FinishReason.Kind != FinishCancelled {
			return v.violate("terminal output #%d of choice %d of a stopped request has finish reason %q, want %q", n, i, o.FinishReason, FinishCancelled)
		}
		v.choiceEnded[i] = true
		v.ended++
		v.terminal = v.ended == v.choices
	}
	v.choiceTokens[i] = tokens
	err := v.emit(o)
	if err != nil {
		v.emitFailed = true
	}
	return err
}

func (v *streamValidator) done(genErr error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.returned {
		return errors.Join(genErr, v.violate("done called twice"))
	}
	v.returned = true
	switch {
	case v.violation != nil:
	case genErr == nil && !v.terminal && v.choices > 1:
		v.violate("Generate returned nil after %d outputs with %d of %d choices ended", v.outputs, v.ended, v.choices)
	case genErr == nil && !v.terminal:
		v.violate("Generate returned nil after %d outputs without a terminal output", v.outputs)
	case genErr != nil && v.terminal && !v.emitFailed:
		v.violate("Generate returned an error after the terminal output: %v", genErr)
	}
	if v.violation != nil {
		return errors.Join(v.violation, genErr)
	}
	return genErr
}

// violate records (the first) violation and returns it; it panics if the
// validator panics. The caller holds v.mu.
func (v *streamValidator) violate(format string, args ...any) error {
	err := fmt.Errorf("%w: "+format, append([]any{ErrContractViolation}, args...)...)
	if v.requestID != "" {
		err = fmt.Errorf("%w (request %s)", err, v.requestID)
	}
	if v.violation == nil {
		v.violation = err
	}
	if v.panics {
		panic(err)
	}
	return err
}
