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
	rc, ok := runtime.FromContext(ctx)
	if !ok {
		return ErrNoRequestContext
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("router: encode request: %w", err)
	}
	decode := func(item []byte) error {
		var out backend.Output
		if err := backend.DecodeOutput(item, &out); err != nil {
			return fmt.Errorf("router: decode engine output: %w", err)
		}
		return emit(&out)
	}
	if req.Routing != nil && req.Routing.BackendInstanceID != nil {
		id := *req.Routing.BackendInstanceID
		avail := e.r.src.Available()
		slices.Sort(avail)
		if _, found := slices.BinarySearch(avail, id); !found {
			return fmt.Errorf("%w: instance %d (%x) does not serve %s", ErrTargetUnavailable, id, id, e.r.src.Endpoint().Path())
		}
		return e.r.Direct(rc, id, payload, decode)
	}
	return e.r.Generate(rc, payload, decode)
}
