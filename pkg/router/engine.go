package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// ErrNoRequestContext is returned when a typed request arrives without a
// runtime request Context: stop and kill could not reach the worker.
var ErrNoRequestContext = errors.New("router: request has no runtime.Context")

// Pick records which instance served a request (for the worker_id extra
// field); the router fills it when the context carries one (WithPick).
type Pick struct {
	// InstanceID is the instance the request was sent to last (after a
	// migration: the last worker).
	InstanceID uint64
}

type pickKey struct{}

// WithPick returns a context in which the router records its choice in p.
func WithPick(ctx context.Context, p *Pick) context.Context {
	return context.WithValue(ctx, pickKey{}, p)
}

func recordPick(ctx context.Context, id uint64) {
	if p, ok := ctx.Value(pickKey{}).(*Pick); ok && p != nil {
		p.InstanceID = id
	}
}

// Engine is the router as a pipeline stage: the engine's Generate shape
// over typed requests, encoded as JSON on the wire. A request whose
// Routing.BackendInstanceID is set goes to that instance only.
type Engine struct {
	r *PushRouter
}

// Engine returns the router as a typed pipeline stage.
func (r *PushRouter) Engine() *Engine { return &Engine{r: r} }

// Generate sends req to one worker and streams its outputs to emit. ctx
// must carry the request's runtime.Context (runtime.FromContext).
func (e *Engine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if req.Routing != nil && req.Routing.BackendInstanceID != nil {
		return e.GenerateOn(ctx, *req.Routing.BackendInstanceID, req, emit)
	}
	rc, payload, decode, err := e.prepare(ctx, req, emit)
	if err != nil {
		return err
	}
	return e.r.generate(rc, payload, decode, func(id uint64) { recordPick(ctx, id) })
}

// GenerateOn sends req to instance id, which must be available (a policy
// outside the router chose it, e.g. the KV router).
func (e *Engine) GenerateOn(ctx context.Context, id uint64, req *backend.Request, emit func(*backend.Output) error) error {
	avail := e.r.src.Available()
	slices.Sort(avail)
	if _, found := slices.BinarySearch(avail, id); !found {
		return fmt.Errorf("%w: instance %d (%x) does not serve %s", ErrTargetUnavailable, id, id, e.r.src.Endpoint().Path())
	}
	rc, payload, decode, err := e.prepare(ctx, req, emit)
	if err != nil {
		return err
	}
	recordPick(ctx, id)
	return e.r.Direct(rc, id, payload, decode)
}

// Available returns the instances requests can go to now.
func (e *Engine) Available() []uint64 { return e.r.src.Available() }

func (e *Engine) prepare(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) (*runtime.Context, []byte, func([]byte) error, error) {
	rc, ok := runtime.FromContext(ctx)
	if !ok {
		return nil, nil, nil, ErrNoRequestContext
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("router: encode request: %w", err)
	}
	decode := func(item []byte) error {
		var out backend.Output
		if err := backend.DecodeOutput(item, &out); err != nil {
			return fmt.Errorf("router: decode engine output: %w", err)
		}
		return emit(&out)
	}
	return rc, payload, decode, nil
}
