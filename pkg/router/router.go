package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// ErrNoInstances is returned when the endpoint has no instance to call.
var ErrNoInstances = errors.New("router: no instances")

// Policy picks one instance among candidates: the available instance ids,
// sorted and never empty.
type Policy interface {
	Pick(ctx context.Context, candidates []uint64) (uint64, error)
}

// instanceSource is what the router needs from a runtime client
// (*runtime.Client implements it).
type instanceSource interface {
	Endpoint() runtime.EndpointID
	Available() []uint64
	ReportInstanceDown(id uint64)
	Call(rc *runtime.Context, id uint64, payload []byte, emit func(item []byte) error) error
}

var _ instanceSource = (*runtime.Client)(nil)

// PushRouter sends each request to one instance picked by its policy.
type PushRouter struct {
	src    instanceSource
	policy Policy
	log    *slog.Logger
}

// New returns a router over the instances of src. A nil logger discards.
func New(src instanceSource, policy Policy, log *slog.Logger) *PushRouter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PushRouter{src: src, policy: policy, log: log}
}

// Generate picks an instance and streams its response items to emit. If
// the picked instance vanished from discovery in the meantime, it picks
// once more among the rest.
func (r *PushRouter) Generate(rc *runtime.Context, payload []byte, emit func(item []byte) error) error {
	return r.generate(rc, payload, emit, nil)
}

func (r *PushRouter) generate(rc *runtime.Context, payload []byte, emit func(item []byte) error, picked func(uint64)) error {
	exclude := uint64(0)
	for attempt := 0; ; attempt++ {
		id, err := r.pick(rc, exclude)
		if err != nil {
			return err
		}
		if picked != nil {
			picked(id)
		}
		err = r.Direct(rc, id, payload, emit)
		if attempt == 0 && errors.Is(err, runtime.ErrUnknownInstance) {
			r.log.Warn("router: instance disappeared during routing, reselecting", "endpoint", r.src.Endpoint().Path(), "instance_id", id)
			exclude = id
			continue
		}
		return err
	}
}

func (r *PushRouter) pick(ctx context.Context, exclude uint64) (uint64, error) {
	ids := r.src.Available()
	if exclude != 0 {
		ids = removeID(ids, exclude)
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("%w found for endpoint %s", ErrNoInstances, r.src.Endpoint().Path())
	}
	id, err := r.policy.Pick(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("router: %s: %w", r.src.Endpoint().Path(), err)
	}
	return id, nil
}

// Direct calls instance id, whatever the policy. An instance whose call
// fails for an instance fault (cannot connect, disconnected, timeouts,
// engine shutdown) is reported down, unless the caller stopped the request.
func (r *PushRouter) Direct(rc *runtime.Context, id uint64, payload []byte, emit func(item []byte) error) error {
	err := r.src.Call(rc, id, payload, emit)
	if err != nil && runtime.IsInstanceFault(err) && !rc.IsStopped() && !errors.Is(err, runtime.ErrUnknownInstance) {
		r.src.ReportInstanceDown(id)
	}
	return err
}

func removeID(ids []uint64, id uint64) []uint64 {
	out := ids[:0:0]
	for _, v := range ids {
		if v != id {
			out = append(out, v)
		}
	}
	return out
}
