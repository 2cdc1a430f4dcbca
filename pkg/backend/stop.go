package backend

import (
	"context"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Stopped returns a channel that is closed when the request of ctx is
// stopped (gracefully) or killed. For a ctx without a request context it
// is ctx.Done().
func Stopped(ctx context.Context) <-chan struct{} {
	if rc, ok := runtime.FromContext(ctx); ok {
		return rc.Stopped()
	}
	return ctx.Done()
}

// IsStopped reports whether the request of ctx was stopped or killed.
func IsStopped(ctx context.Context) bool {
	select {
	case <-Stopped(ctx):
		return true
	default:
		return false
	}
}

// RequestID returns the id of the request of ctx, or "".
func RequestID(ctx context.Context) string {
	if rc, ok := runtime.FromContext(ctx); ok {
		return rc.ID()
	}
	return ""
}
