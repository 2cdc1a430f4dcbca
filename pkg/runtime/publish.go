package runtime

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoEventPlane is returned by Publish when the process has no event
// plane (NATS is connected only for the nats request plane).
var ErrNoEventPlane = errors.New("runtime: no event plane (NATS not connected)")

// Publish sends data on subject of the event plane (NATS), fire and
// forget, inside an Envelope numbered per subject. Subscribers that are
// not listening miss it; KV routers recover from gaps through the
// workers' query endpoints.
func (rt *DistributedRuntime) Publish(_ context.Context, subject string, data []byte) error {
	if rt.nc == nil {
		return ErrNoEventPlane
	}
	msg, err := rt.envelope(subject, data)
	if err != nil {
		return err
	}
	if err := rt.nc.Publish(subject, msg); err != nil {
		return fmt.Errorf("runtime: publish %s: %w", subject, err)
	}
	return nil
}
