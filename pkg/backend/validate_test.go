package backend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// TestValidateStream drives one validator per case with a scripted engine
// and checks both what checked returned and what done reported.
func TestValidateStream(t *testing.T) {
	errDownstream := errors.New("client gone")
	errEngine := errors.New("engine: out of memory")
	tests := []struct {
		name    string
		stopped bool      // request stopped before Generate
		outputs []*Output // emitted in order; the engine stops at the first emit error
		genErr  error     // what Generate returns (nil: the emit error, if any)
		sinkErr error     // what the downstream emit returns for a terminal
		want    string    // substring of the violation, "" for a clean stream
		wantErr error     // error done must report besides (errors.Is)
		wantFwd int       // outputs forwarded downstream
	}{
		{name: "clean", outputs: []*Output{Tokens(1), Tokens(2, 3), Length(4).WithUsage(3, 4)}, wantFwd: 3},
		{name: "clean without usage", outputs: []*Output{Tokens(1), EOS()}, wantFwd: 2},
		{name: "clean terminal only", outputs: []*Output{Stop(7)}, wantFwd: 1},
		{name: "error before output", genErr: errEngine, wantErr: errEngine},
		{name: "error mid-stream", outputs: []*Output{Tokens(1)}, genErr: errEngine, wantErr: errEngine, wantFwd: 1},
		{name: "downstream fails on terminal", outputs: []*Output{Tokens(1), EOS()}, sinkErr: errDownstream, wantErr: errDownstream, wantFwd: 2},
		{name: "stopped and cancelled", stopped: true, outputs: []*Output{Tokens(1), Cancelled()}, wantFwd: 2},
		{name: "stopped and error", stopped: true, genErr: errEngine, wantErr: errEngine},
		{name: "nil output", outputs: []*Output{Tokens(1), nil}, want: "output #2 is nil", wantFwd: 1},
		{name: "output after terminal", outputs: []*Output{EOS(1), Tokens(2)}, want: "output #2 after the terminal", wantFwd: 1},
		{name: "second terminal", outputs: []*Output{EOS(1), Length()}, want: "after the terminal", wantFwd: 1},
		{name: "no terminal", outputs: []*Output{Tokens(1), Tokens(2)}, want: "without a terminal output", wantFwd: 2},
		{name: "nothing at all", want: "returned nil after 0 outputs"},
		{name: "usage mismatch", outputs: []*Output{Tokens(1, 2), Length(3).WithUsage(3, 2)}, want: "completion_tokens 2, but 3", wantFwd: 1},
		{name: "error after terminal", outputs: []*Output{EOS()}, genErr: errEngine, want: "error after the terminal", wantErr: errEngine, wantFwd: 1},
		{name: "stopped but length", stopped: true, outputs: []*Output{Tokens(1), Length()}, want: `finish reason "length"`, wantFwd: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := runtime.NewContext(t.Context(), "req-1")
			defer rc.Release()
			if tc.stopped {
				rc.Stop()
			}
			var fwd int
			sink := func(o *Output) error { // fails (with sinkErr) on the terminal only
				fwd++
				if o.IsTerminal() {
					return tc.sinkErr
				}
				return nil
			}
			checked, done := ValidateStream(sink, ValidateStop(rc), ValidatePanic(false))

			genErr := tc.genErr
			var emitErr error
			for _, o := range tc.outputs {
				if emitErr = checked(o); emitErr != nil {
					break
				}
			}
			if genErr == nil {
				genErr = emitErr
			}
			err := done(genErr)

			if fwd != tc.wantFwd {
				t.Errorf("forwarded %d outputs, want %d", fwd, tc.wantFwd)
			}
			if tc.want == "" {
				if errors.Is(err, ErrContractViolation) || errors.Is(emitErr, ErrContractViolation) {
					t.Fatalf("clean stream reported a violation: emit %v, done %v", emitErr, err)
				}
			} else {
				if !errors.Is(err, ErrContractViolation) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("done = %v, want a violation containing %q", err, tc.want)
				}
				if !strings.Contains(err.Error(), "req-1") {
					t.Errorf("violation %q does not name the request", err)
				}
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("done = %v, want it to wrap %v", err, tc.wantErr)
			}
			if tc.want == "" && tc.wantErr == nil && err != nil {
				t.Errorf("done = %v, want nil", err)
			}
		})
	}
}

// TestValidateStreamEmitReturnsViolation checks that the emit the engine
// sees fails at once, so a well-behaved engine stops.
func TestValidateStreamEmitReturnsViolation(t *testing.T) {
	checked, done := ValidateStream(func(*Output) error { return nil }, ValidatePanic(false))
	if err := checked(EOS()); err != nil {
		t.Fatal(err)
	}
	if err := checked(Tokens(1)); !errors.Is(err, ErrContractViolation) {
		t.Fatalf("emit after terminal = %v, want ErrContractViolation", err)
	}
	if err := done(nil); !errors.Is(err, ErrContractViolation) {
		t.Fatalf("done = %v, want ErrContractViolation", err)
	}
	if err := checked(Tokens(2)); !errors.Is(err, ErrContractViolation) || !strings.Contains(err.Error(), "after Generate returned") {
		t.Fatalf("emit after done = %v, want a violation", err)
	}
}

// TestValidateStreamStopAfterStart checks that a stop arriving after the
// stream began is not held against the engine.
func TestValidateStreamStopAfterStart(t *testing.T) {
	rc := runtime.NewContext(context.Background(), "")
	defer rc.Release()
	checked, done := ValidateStream(func(*Output) error { return nil }, ValidateStop(rc), ValidatePanic(false))
	if err := checked(Tokens(1)); err != nil {
		t.Fatal(err)
	}
	rc.Stop()
	if err := checked(Length()); err != nil {
		t.Fatalf("terminal after a late stop = %v, want nil", err)
	}
	if err := done(nil); err != nil {
		t.Fatal(err)
	}
}

// TestValidateStreamPanics checks the loud mode used by debug builds.
func TestValidateStreamPanics(t *testing.T) {
	checked, _ := ValidateStream(func(*Output) error { return nil }, ValidatePanic(true))
	if err := checked(EOS()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		p := recover()
		err, ok := p.(error)
		if !ok || !errors.Is(err, ErrContractViolation) {
			t.Fatalf("recovered %v, want an error wrapping ErrContractViolation", p)
		}
	}()
	_ = checked(Tokens(1))
	t.Fatal("no panic")
}

// TestValidateStreamDoneTwice checks that a second done is reported.
func TestValidateStreamDoneTwice(t *testing.T) {
	_, done := ValidateStream(func(*Output) error { return nil }, ValidatePanic(false))
	_ = done(errors.New("first"))
	if err := done(nil); !errors.Is(err, ErrContractViolation) {
		t.Fatalf("second done = %v, want ErrContractViolation", err)
	}
}

// TestValidateStreamChoices drives validators of n=3 requests: each
// choice ends with its own terminal, in any order, and the stream ends
// after the last; a second terminal for one choice, an output after all
// choices ended, an index out of range or a choice left open is caught.
func TestValidateStreamChoices(t *testing.T) {
	at := func(i uint32, o *Output) *Output { o.Index = &i; return o }
	tests := []struct {
		name    string
		stopped bool
		outputs []*Output
		want    string // substring of the violation, "" for a clean stream
	}{
		{name: "interleaved", outputs: []*Output{
			at(0, Tokens(1)), at(1, Tokens(2)), at(2, Tokens(3)), at(1, EOS(4).WithUsage(5, 2)),
			at(0, Tokens(5)), at(2, Length().WithUsage(5, 1)), at(0, Length().WithUsage(5, 2)),
		}},
		{name: "choice 0 without index", outputs: []*Output{
			Tokens(1), at(1, Length(2).WithUsage(5, 1)), at(2, EOS()), Length().WithUsage(5, 1),
		}},
		{name: "stopped: all cancelled", stopped: true, outputs: []*Output{
			at(0, Cancelled()), at(1, Cancelled()), at(2, Cancelled()),
		}},
		{name: "second terminal for a choice", outputs: []*Output{
			at(0, EOS()), at(1, EOS()), at(1, Length()),
		}, want: "output #3 after the terminal output of choice 1"},
		{name: "token after its choice ended", outputs: []*Output{
			at(2, EOS()), at(2, Tokens(9)),
		}, want: "output #2 after the terminal output of choice 2"},
		{name: "output after every choice ended", outputs: []*Output{
			at(0, EOS()), at(1, EOS()), at(2, EOS()), at(0, Tokens(1)),
		}, want: "output #4 after the terminal output of every choice"},
		{name: "index out of range", outputs: []*Output{at(3, Tokens(1))}, want: "choice index 3, the request has n=3"},
		{name: "a choice left open", outputs: []*Output{at(0, EOS()), at(2, EOS())}, want: "with 2 of 3 choices ended"},
		{name: "usage counts the whole stream", outputs: []*Output{
			at(0, Tokens(1)), at(1, Tokens(2)), at(1, EOS().WithUsage(5, 2)),
		}, want: "choice 1 reports completion_tokens 2, but 1"},
		{name: "stopped but length", stopped: true, outputs: []*Output{
			at(0, Cancelled()), at(1, Length()),
		}, want: `choice 1 of a stopped request has finish reason "length"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := runtime.NewContext(t.Context(), "req-n")
			defer rc.Release()
			if tc.stopped {
				rc.Stop()
			}
			req := &Request{SamplingOptions: SamplingOptions{N: Ptr(3)}}
			checked, done := ValidateStream(func(*Output) error { return nil }, ValidateStop(rc), ValidateChoices(req), ValidatePanic(false))
			var emitErr error
			for _, o := range tc.outputs {
				if emitErr = checked(o); emitErr != nil {
					break
				}
			}
			err := done(emitErr)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("clean stream of 3 choices: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrContractViolation) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("done = %v, want a violation containing %q", err, tc.want)
			}
		})
	}
}

// TestValidateChoicesOfOneChoice checks that n absent or 1 keeps the
// one-terminal stream: a second terminal is still a violation.
func TestValidateChoicesOfOneChoice(t *testing.T) {
	for _, n := range []*int{nil, Ptr(1)} {
		req := &Request{SamplingOptions: SamplingOptions{N: n}}
		checked, done := ValidateStream(func(*Output) error { return nil }, ValidateChoices(req), ValidatePanic(false))
		_ = checked(EOS())
		if err := checked(EOS()); !errors.Is(err, ErrContractViolation) || !strings.Contains(err.Error(), "after the terminal output") {
			t.Errorf("n=%v: second terminal = %v, want a violation", n, err)
		}
		_ = done(nil)
	}
}
