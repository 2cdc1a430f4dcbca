package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// ErrUnknownInstance is returned (with a CannotConnect error) by Call for
// an instance id that discovery does not list.
var ErrUnknownInstance = errors.New("runtime: unknown instance")

// Client calls the instances of one endpoint. It follows discovery (list,
// then watch), skips for a while instances whose calls failed, and fails
// pending calls of an instance the moment it leaves discovery. A runtime
// keeps one Client per endpoint; it is safe for concurrent use.
type Client struct {
	rt *DistributedRuntime
	ep EndpointID

	ready chan struct{} // closed after the first discovery snapshot

	mu        sync.RWMutex
	instances map[uint64]Instance
	inhibited map[uint64]time.Time // instance -> skipped until
	changed   chan struct{}        // closed and replaced on every change
}

// Client returns the endpoint's client, creating it and waiting (bounded by
// ctx) for the first discovery snapshot on first use. The watch runs until
// the runtime closes.
func (e *Endpoint) Client(ctx context.Context) (*Client, error) {
	if err := e.id.Validate(); err != nil {
		return nil, err
	}
	rt := e.rt
	rt.mu.Lock()
	c, ok := rt.clients[e.id]
	if !ok {
		c = &Client{
			rt:        rt,
			ep:        e.id,
			ready:     make(chan struct{}),
			instances: make(map[uint64]Instance),
			inhibited: make(map[uint64]time.Time),
			changed:   make(chan struct{}),
		}
		if !rt.bg.goRun("watch "+e.id.Path(), c.watch) {
			rt.mu.Unlock()
			return nil, ErrRuntimeClosed
		}
		rt.clients[e.id] = c
	}
	rt.mu.Unlock()
	select {
	case <-c.ready:
		return c, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Endpoint returns the id of the endpoint the client calls.
func (c *Client) Endpoint() EndpointID { return c.ep }

// watch follows the endpoint's instance records until ctx ends.
func (c *Client) watch(ctx context.Context) error {
	prefix := EndpointPrefix(InstancesBucket, c.ep)
	for ctx.Err() == nil {
		events, err := c.rt.store.Watch(ctx, prefix)
		if err != nil {
			args := []any{"endpoint", c.ep.Path(), "err", err}
			if advice := authAdvice(err); advice != "" {
				args = append(args, "advice", advice)
			}
			c.rt.log.Warn("runtime: discovery watch failed; retrying", args...)
		} else {
			for ev := range events {
				c.apply(ev)
			}
		}
		select {
		case <-ctx.Done():
		case <-c.rt.store.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	return nil
}

func (c *Client) apply(ev discovery.Event) {
	streams := c.rt.streamsIfStarted()
	c.mu.Lock()
	defer c.mu.Unlock()
	var added, removed []uint64
	switch ev.Type {
	case discovery.EventResync:
		next := make(map[uint64]Instance, len(ev.Snapshot))
		for _, kv := range ev.Snapshot {
			if inst, ok := c.decode(kv); ok {
				next[inst.ID] = inst
			}
		}
		for id := range c.instances {
			if _, ok := next[id]; !ok {
				removed = append(removed, id)
			}
		}
		for id := range next {
			if _, ok := c.instances[id]; !ok {
				added = append(added, id)
			}
		}
		c.instances = next
	case discovery.EventPut:
		if inst, ok := c.decode(discovery.KeyValue{Key: ev.Key, Value: ev.Value}); ok {
			c.instances[inst.ID] = inst
			added = append(added, inst.ID)
		}
	case discovery.EventDelete:
		id, err := instanceIDFromKey(ev.Key)
		if err == nil {
			if _, ok := c.instances[id]; ok {
				delete(c.instances, id)
				removed = append(removed, id)
			}
		}
	}
	for _, id := range removed {
		delete(c.inhibited, id)
		if streams != nil {
			streams.CancelInstance(streamInstance(c.ep, id))
		}
	}
	for _, id := range added {
		delete(c.inhibited, id)
		if streams != nil {
			streams.ClearTombstone(streamInstance(c.ep, id))
		}
	}
	if len(added)+len(removed) > 0 || ev.Type == discovery.EventResync {
		close(c.changed)
		c.changed = make(chan struct{})
	}
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
}

func (c *Client) decode(kv discovery.KeyValue) (Instance, bool) {
	var inst Instance
	if err := json.Unmarshal(kv.Value, &inst); err != nil {
		c.rt.log.Warn("runtime: ignoring bad instance record", "key", kv.Key, "err", err)
		return Instance{}, false
	}
	return inst, true
}

// Instances returns the discovered instances, sorted by id.
func (c *Client) Instances() []Instance {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Instance, 0, len(c.instances))
	for _, inst := range c.instances {
		out = append(out, inst)
	}
	slices.SortFunc(out, func(a, b Instance) int { return cmpU64(a.ID, b.ID) })
	return out
}

// InstanceIDs returns the ids of the discovered instances, sorted.
func (c *Client) InstanceIDs() []uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ids := make([]uint64, 0, len(c.instances))
	for id := range c.instances {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Available returns the ids of the discovered instances that are not being
// skipped after a failure (ReportInstanceDown), sorted. When every
// discovered instance is being skipped it returns them all: an instance
// stays in discovery while its lease is alive, and a failure report
// (often an ack that timed out because the worker is busy, not gone) must
// not leave the endpoint with nothing to route to while its workers are
// registered. A crashed instance leaves discovery with its lease.
func (c *Client) Available() []uint64 {
	now := time.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	ids := make([]uint64, 0, len(c.instances))
	for id := range c.instances {
		if until, ok := c.inhibited[id]; ok && (until.IsZero() || now.Before(until)) {
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		for id := range c.instances {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// ReportInstanceDown skips id in Available for Config.InhibitDuration (or
// until it re-registers). It affects this process only.
func (c *Client) ReportInstanceDown(id uint64) {
	var until time.Time // zero: until it re-registers
	if d := c.rt.cfg.InhibitDuration; d > 0 {
		until = time.Now().Add(d)
	}
	c.mu.Lock()
	if _, ok := c.instances[id]; ok {
		c.inhibited[id] = until
	}
	c.mu.Unlock()
	c.rt.log.Warn("runtime: instance reported down", "endpoint", c.ep.Path(), "instance_id", strconv.FormatUint(id, 16))
}

// WaitForInstances blocks until at least one instance is discovered and
// returns their ids.
func (c *Client) WaitForInstances(ctx context.Context) ([]uint64, error) {
	for {
		c.mu.RLock()
		changed := c.changed
		c.mu.RUnlock()
		if ids := c.InstanceIDs(); len(ids) > 0 {
			return ids, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Changed returns a channel that is closed at the next change of the
// instance set. Take the channel before reading the instances, so that a
// change in between is not missed.
func (c *Client) Changed() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.changed
}

// Call sends payload to instance id and streams the response items to
// emit (see Handler for the item contract). It returns nil after a clean
// end; a *Error otherwise: CannotConnect when the request could not be
// delivered, Disconnected when the instance went away before or during the
// stream, the worker's typed error when the handler failed, or the cause
// of the request's kill. After its Stop the stream ends early and cleanly.
//
// ctx must carry the request's Context (FromContext; a *Context is one);
// the trace context of ctx's span travels with the request (traceparent),
// so the worker's spans are its children.
func (c *Client) Call(ctx context.Context, id uint64, payload []byte, emit func(item []byte) error) error {
	c.mu.RLock()
	inst, ok := c.instances[id]
	c.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: %w", ErrUnknownInstance, NewError(TypeCannotConnect, "instance_id=%x not found for endpoint %s", id, c.ep.Path()))
	}
	return c.rt.call(ctx, inst, payload, emit)
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
