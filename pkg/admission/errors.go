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

// Refusal reasons: the reason label of the refusals counter
// (router_queue_rejected_total), and of the requeue counter for the
// worker refusals.
const (
	// ReasonQueueFull: the model was saturated and its queue full.
	ReasonQueueFull = "queue_full"
	// ReasonQueueTimeout: the request waited Config.QueueTimeout.
	ReasonQueueTimeout = "queue_timeout"
	// ReasonWorkerFull: the worker it was sent to refused it as full
	// (its own queue, ResourceExhausted), and it could not wait for
	// another (no queue, its queue timeout spent, or it was pinned).
	ReasonWorkerFull = "worker_full"
	// ReasonAckTimeout: the worker it was sent to is alive but did not
	// accept it within the request plane's ack timeout
	// (runtime.ErrAckTimeout), and it could not wait for another.
	ReasonAckTimeout = "ack_timeout"
	// ReasonWorkersBusy: the KV router found every worker busy by its
	// thresholds (or a worker answered WorkerOverloaded), and it could
	// not wait for another.
	ReasonWorkersBusy = "workers_busy"
	// ReasonTenantLimit: the frontend refused it (429) because its tenant
	// had --tenant-max-inflight requests in flight (counted through
	// Stage.Refused).
	ReasonTenantLimit = "tenant_limit"
)

// RefusedError is a request the stage refused because the model's workers
// are saturated. It matches ErrRefused and runtime.ErrWorkerOverloaded,
// and its Cause.
type RefusedError struct {
	// Model is the model's name.
	Model string
	// Reason is one of the Reason constants.
	Reason string
	// Waiting is the number of requests in the queue at the refusal.
	Waiting int
	// Waited is how long the request waited in the queue.
	Waited time.Duration
	// RetryAfter is how long the client should wait before retrying: the
	// recent mean wait in the queue, at least a second and at most the
	// queue timeout.
	RetryAfter time.Duration
	// Cause is the worker's refusal, for the worker reasons; nil
	// otherwise.
	Cause error
}

// Error says why, in words a client can act on.
func (e *RefusedError) Error() string {
	switch e.Reason {
	case ReasonQueueTimeout:
		return fmt.Sprintf("the model's workers are busy: waited %s in the queue (%d waiting)", e.Waited.Round(time.Millisecond), e.Waiting)
	case ReasonQueueFull:
		if e.Waiting == 0 {
			return "the model's workers are busy, and requests do not queue (--router-queue-max 0)"
		}
		return fmt.Sprintf("the model's workers are busy: the queue is full (%d waiting)", e.Waiting)
	case ReasonAckTimeout:
		return fmt.Sprintf("the model's workers are busy: a worker did not accept the request in time: %v", e.Cause)
	}
	return fmt.Sprintf("the model's workers are busy: %v", e.Cause)
}

// Unwrap returns the refusal's classes, and its cause.
func (e *RefusedError) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrRefused, runtime.ErrWorkerOverloaded, e.Cause}
	}
	return []error{ErrRefused, runtime.ErrWorkerOverloaded}
}
