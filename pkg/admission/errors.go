package admission

import (
	"errors"
	"fmt"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// ErrRefused is the class of the stage's refusals: every *RefusedError
// matches it.
var ErrRefused = errors.New("admission: refused")

// Refusal reasons (the reason label of the refusals counter).
const (
	// ReasonQueueFull: the model was saturated and its queue full.
	ReasonQueueFull = "queue_full"
	// ReasonQueueTimeout: the request waited Config.QueueTimeout.
	ReasonQueueTimeout = "queue_timeout"
)

// RefusedError is a request the stage refused because the model's workers
// are saturated. It matches ErrRefused and runtime.ErrWorkerOverloaded.
type RefusedError struct {
	// Model is the model's name.
	Model string
	// Reason is ReasonQueueFull or ReasonQueueTimeout.
	Reason string
	// Waiting is the number of requests in the queue at the refusal.
	Waiting int
	// Waited is how long the request waited in the queue.
	Waited time.Duration
	// RetryAfter is how long the client should wait before retrying: the
	// recent mean wait in the queue, at least a second and at most the
	// queue timeout.
	RetryAfter time.Duration
}

// Error says why, in words a client can act on.
func (e *RefusedError) Error() string {
	if e.Reason == ReasonQueueTimeout {
		return fmt.Sprintf("the model's workers are busy: waited %s in the queue (%d waiting)", e.Waited.Round(time.Millisecond), e.Waiting)
	}
	if e.Waiting == 0 {
		return "the model's workers are busy, and requests do not queue (--router-queue-max 0)"
	}
	return fmt.Sprintf("the model's workers are busy: the queue is full (%d waiting)", e.Waiting)
}

// Unwrap returns the refusal's classes.
func (e *RefusedError) Unwrap() []error {
	return []error{ErrRefused, runtime.ErrWorkerOverloaded}
}
