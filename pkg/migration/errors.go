package migration

import (
	"context"
	"errors"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Migratable reports whether err means the worker is gone or unreachable,
// so the request may move to another worker: cannot connect, disconnected
// (the stream ended without its final marker), connection or response
// timeouts, a stream cut short, or an engine shutting down. A
// cancellation anywhere in the chain wins: it is never migrated, nor are
// capacity errors, validation errors or "no instances at all".
func Migratable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, runtime.ErrCancelled) {
		return false
	}
	var re *runtime.Error
	if !errors.As(err, &re) {
		return false
	}
	switch re.Type {
	case runtime.TypeCannotConnect, runtime.TypeDisconnected, runtime.TypeConnectionTimeout,
		runtime.TypeResponseTimeout, runtime.TypeStreamIncomplete, runtime.TypeEngineShutdown:
		return true
	}
	return false
}

// isConnectFailure reports a failure to start the stream at all.
func isConnectFailure(err error) bool {
	return errors.Is(err, runtime.ErrCannotConnect) || errors.Is(err, runtime.ErrUnknownInstance)
}

// overloaded reports a worker's refusal of a request that had not
// started: it is full (ResourceExhausted) or did not accept it in time
// (runtime.ErrAckTimeout, a WorkerOverloaded error).
func overloaded(err error) bool {
	return errors.Is(err, runtime.ErrResourceExhausted) || errors.Is(err, runtime.ErrWorkerOverloaded)
}
