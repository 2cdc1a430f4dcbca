package runtime

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Subscribe calls handle with the payload of every message published on
// subject of the event plane (NATS) until ctx ends. handle runs on one
// goroutine, in publication order per publisher; it must not block for
// long. A message that is not an Envelope is logged and skipped. Without
// an event plane it returns ErrNoEventPlane.
func (rt *DistributedRuntime) Subscribe(ctx context.Context, subject string, handle func(data []byte)) error {
	if rt.nc == nil {
		return ErrNoEventPlane
	}
	sub, err := rt.nc.Subscribe(subject, func(m *nats.Msg) {
		e, err := DecodeEnvelope(m.Data)
		if err != nil {
			rt.log.Warn("runtime: event-plane message skipped", "subject", subject, "bytes", len(m.Data), "err", err)
			return
		}
		handle(e.Payload)
	})
	if err != nil {
		return fmt.Errorf("runtime: subscribe %s: %w", subject, err)
	}
	if err := sub.SetPendingLimits(-1, 64<<20); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("runtime: subscribe %s: %w", subject, err)
	}
	context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	return nil
}

// HasEventPlane reports whether the runtime has an event plane (NATS):
// without one, Subscribe and Publish return ErrNoEventPlane.
func (rt *DistributedRuntime) HasEventPlane() bool { return rt.nc != nil }
