package backendtest

import (
	"errors"
	"fmt"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// ErrInvalidOption is wrapped by the error of a bad Option; Run reports it
// as a test failure and runs nothing.
var ErrInvalidOption = errors.New("backendtest: invalid option")

// Option adjusts Run.
type Option func(*options) error

// options are Run's settings; the zero value is not valid, see defaults.
type options struct {
	timeout        time.Duration            // bound on each engine call
	cancelDeadline time.Duration            // the Cancellation check's limit
	leakCheck      bool                     // run the GoroutineLeak check
	adapt          []func(*backend.Request) // applied to every test request
}

func defaults() options {
	return options{timeout: 2 * time.Minute, cancelDeadline: 2 * time.Second, leakCheck: true}
}

// WithTimeout bounds each engine call of the kit: Start, Cleanup, one
// Generate stream (default 2 minutes). An engine whose Start loads a big
// model may need more. It does not change the Cancellation check's fixed
// limit of 2 s.
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithTimeout(%v): not positive", ErrInvalidOption, d)
		}
		o.timeout = d
		return nil
	}
}

// WithoutLeakCheck skips the GoroutineLeak check, for engines whose
// goroutines legitimately outlive Cleanup (a shared client pool) or tests
// that run in parallel.
func WithoutLeakCheck() Option {
	return func(o *options) error { o.leakCheck = false; return nil }
}

// WithRequest adapts every request the kit sends, for example to name
// another model or add sampling options. The kit fills Model (Config.Model
// from Start) and TokenIDs ([1 2 3]), applies the functions in order, then
// sets MaxTokens to the check's value (8, or 10000 for Cancellation).
func WithRequest(f func(*backend.Request)) Option {
	return func(o *options) error {
		if f == nil {
			return fmt.Errorf("%w: WithRequest(nil)", ErrInvalidOption)
		}
		o.adapt = append(o.adapt, f)
		return nil
	}
}
