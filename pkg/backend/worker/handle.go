package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// handle serves one request: decode it, run Generate, stream the outputs.
// Every output sent, but an error terminal, tells the canary the endpoint
// is busy.
func (w *server) handle(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
	var req backend.Request
	if err := backend.DecodeRequest(payload, &req); err != nil {
		return runtime.NewError(backend.TypeInvalidArgument, "worker: bad request: %v", err)
	}
	if req.Routing != nil && req.Routing.LoraName != nil && *req.Routing.LoraName != "" {
		release, err := w.loras.acquire(rc, *req.Routing.LoraName)
		if err != nil {
			return err
		}
		defer release()
	}
	// The engine runs under its span, which ctx carries on top of rc
	// (runtime.FromContext(ctx) is rc: its stop and kill hold).
	ctx, es := w.startEngineSpan(rc, &req)
	send := func(o *backend.Output) error {
		if o == nil {
			return fmt.Errorf("%w: nil output", backend.ErrContractViolation)
		}
		es.output(o)
		b, err := backend.AppendOutputJSON(nil, o)
		if err != nil {
			return fmt.Errorf("worker: encode output: %w", err)
		}
		if err := emit(b); err != nil {
			return err
		}
		if o.FinishReason == nil || o.FinishReason.Kind != backend.FinishError {
			w.canary.busy()
		}
		return nil
	}
	err := w.generate(ctx, rc, &req, send)
	es.end(rc, err)
	w.logEnd(ctx, rc, &req, es, err)
	if errors.Is(err, backend.ErrDropStream) {
		// Fault injection: end like a crashed worker, without the final marker.
		w.log.WarnContext(rc, "worker: dropping the response stream (fault injection)", "request_id", rc.ID())
		rc.Kill()
	}
	return err
}

// generate runs one request on the engine, for the endpoint and for the
// canary: a backend.Aborter is told once when the request is stopped or
// killed, and with Config.ValidateStreams the stream is checked. ctx is
// what the engine gets: rc, or a context on top of it (with the engine
// span).
func (w *server) generate(ctx context.Context, rc *runtime.Context, req *backend.Request, send func(*backend.Output) error) error {
	if ab, ok := w.engine.(backend.Aborter); ok {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-rc.Stopped():
				ab.Abort(rc, rc.ID())
			case <-done:
			}
		}()
		defer func() { close(done); wg.Wait() }()
	}

	var finish func(error) error
	if w.cfg.ValidateStreams {
		send, finish = backend.ValidateStream(send, backend.ValidateStop(rc), backend.ValidateChoices(req))
	}
	err := w.engine.Generate(ctx, req, send)
	if finish != nil {
		// finish returns Generate's error, joined with any violation.
		if err = finish(err); errors.Is(err, backend.ErrContractViolation) {
			w.log.ErrorContext(rc, "worker: engine broke the stream contract", "request_id", rc.ID(), "err", err)
		}
	}
	return err
}
