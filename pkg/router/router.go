package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// ErrNoInstances is returned when the endpoint has no instance to call.
var ErrNoInstances = errors.New("router: no instances")

// ErrNoRequestContext is returned when a request arrives without a
// runtime request Context: stop and kill could not reach the worker.
var ErrNoRequestContext = errors.New("router: request has no runtime.Context")

// Policy picks one instance for req among candidates: the available
// instance ids, sorted and never empty. It must be safe for concurrent
// use.
type Policy interface {
	Pick(req *backend.Request, candidates []uint64) (uint64, error)
}

// instanceSource is what the router needs from a runtime client
// (*runtime.Client implements it).
type instanceSource interface {
	Endpoint() runtime.EndpointID
	Available() []uint64
	ReportInstanceDown(id uint64)
	Call(ctx context.Context, id uint64, payload []byte, emit func(item []byte) error) error
}

var _ instanceSource = (*runtime.Client)(nil)

// PushRouter is the last stage of a model's pipeline: it sends each
// request to one instance of an endpoint, picked by its policy, and
// streams the instance's outputs back, counting each request in its
// instance's Load while it runs.
type PushRouter struct {
	src    instanceSource
	policy Policy
	log    *slog.Logger
	tracer trace.Tracer
	loads  loads
}

var _ backend.Generator = (*PushRouter)(nil)

// New returns a router over the instances of src. A nil logger discards;
// a nil tracer provider makes no routing spans.
func New(src instanceSource, policy Policy, log *slog.Logger, tp trace.TracerProvider) *PushRouter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PushRouter{src: src, policy: policy, log: log, tracer: telemetry.Tracer(tp, "github.com/dynamo-go/dynamo/pkg/router")}
}

// Generate sends req to one instance and streams its outputs to emit, each
// with its Placement set. A request whose Routing.BackendInstanceID is set
// goes to that instance, whatever the policy; any other goes where the
// policy picks, and if that instance vanished from discovery in the
// meantime, the router picks once more among the rest. ctx must carry the
// request's runtime.Context (runtime.FromContext).
func (r *PushRouter) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if req.Routing != nil && req.Routing.BackendInstanceID != nil {
		return r.GenerateOn(telemetry.WithAttributes(ctx, attrPolicy.String(policyDirect)), *req.Routing.BackendInstanceID, req, emit)
	}
	ctx = telemetry.WithAttributes(ctx, attrPolicy.String(policyName(r.policy)))
	payload, err := encode(ctx, req)
	if err != nil {
		return err
	}
	exclude := uint64(0)
	for attempt := 0; ; attempt++ {
		id, err := r.pick(req, exclude)
		if err != nil {
			return err
		}
		err = r.call(ctx, id, len(req.TokenIDs), payload, emit)
		if attempt == 0 && errors.Is(err, runtime.ErrUnknownInstance) {
			r.log.WarnContext(ctx, "router: instance disappeared during routing, reselecting", "endpoint", r.src.Endpoint().Path(), "instance_id", id)
			exclude = id
			continue
		}
		return err
	}
}

// GenerateOn sends req to instance id, which must be available: a choice
// made before the router, by the KV router or by the request itself.
func (r *PushRouter) GenerateOn(ctx context.Context, id uint64, req *backend.Request, emit func(*backend.Output) error) error {
	if _, found := slices.BinarySearch(r.src.Available(), id); !found {
		return fmt.Errorf("%w: instance %d (%x) does not serve %s", ErrTargetUnavailable, id, id, r.src.Endpoint().Path())
	}
	payload, err := encode(ctx, req)
	if err != nil {
		return err
	}
	return r.call(ctx, id, len(req.TokenIDs), payload, emit)
}

// Available returns the instances requests can go to now, sorted.
func (r *PushRouter) Available() []uint64 { return r.src.Available() }

// Loads returns the load this router has in flight to each of ids, in
// the same order, and the requests it has in flight in all (to any
// instance, available or not).
func (r *PushRouter) Loads(ids []uint64) ([]Load, int) { return r.loads.of(ids) }

// OnLoadChange makes the router call f after every change of its loads
// that frees capacity: a request's first output, its end. f must not
// block; it runs on the request's goroutine, with no lock of the
// router's held. Call it before the router serves requests.
func (r *PushRouter) OnLoadChange(f func()) { r.loads.onChange = f }

func (r *PushRouter) pick(req *backend.Request, exclude uint64) (uint64, error) {
	ids := r.src.Available()
	if exclude != 0 {
		ids = removeID(ids, exclude)
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("%w found for endpoint %s", ErrNoInstances, r.src.Endpoint().Path())
	}
	id, err := r.policy.Pick(req, ids)
	if err != nil {
		return 0, fmt.Errorf("router: %s: %w", r.src.Endpoint().Path(), err)
	}
	return id, nil
}

// call sends the encoded request of isl prompt tokens to instance id and
// decodes its outputs, counting it in the instance's Load until it ends,
// under a routing span (the policy, the instance, and what the stages
// before said through telemetry.WithAttributes) that is the parent of the
// worker's spans. An instance whose call fails for an instance fault
// (cannot connect, disconnected, timeouts, engine shutdown) is reported
// down, unless the caller stopped the request.
func (r *PushRouter) call(ctx context.Context, id uint64, isl int, payload []byte, emit func(*backend.Output) error) error {
	ctx, span := r.tracer.Start(ctx, "route", trace.WithAttributes(telemetry.Attributes(ctx)...),
		trace.WithAttributes(attrInstance.String(fmt.Sprintf("%x", id))))
	defer span.End()
	rc, _ := runtime.FromContext(ctx)
	placement := &backend.Placement{WorkerID: id}
	f := r.loads.start(id, isl)
	// One Output for the stream, filled anew for each item (the
	// Generator contract): a token costs no Output allocation.
	out := new(backend.Output)
	err := r.src.Call(ctx, id, payload, func(item []byte) error {
		f.prefilled()
		*out = backend.Output{}
		if err := backend.DecodeOutput(item, out); err != nil {
			return fmt.Errorf("router: decode engine output: %w", err)
		}
		out.Placement = placement
		return emit(out)
	})
	f.end(err)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	if err != nil && runtime.IsInstanceFault(err) && !rc.IsStopped() && !errors.Is(err, runtime.ErrUnknownInstance) {
		r.src.ReportInstanceDown(id)
	}
	return err
}

// encode returns the request's wire encoding; ctx must carry the
// request's runtime context.
func encode(ctx context.Context, req *backend.Request) ([]byte, error) {
	if _, ok := runtime.FromContext(ctx); !ok {
		return nil, ErrNoRequestContext
	}
	// Not json.Marshal: it would scan the result once more to compact
	// it, and a long prompt's ids are most of it.
	payload, err := req.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("router: encode request: %w", err)
	}
	return payload, nil
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
