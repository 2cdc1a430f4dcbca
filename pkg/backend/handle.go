package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// handle serves one request: decode it, run Generate, stream the outputs.
func (w *Worker) handle(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
	var req Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return runtime.NewError(TypeInvalidArgument, "backend: bad request: %v", err)
	}

	// Tell an Aborter once when the request is stopped or killed.
	if ab, ok := w.engine.(Aborter); ok {
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

	send := func(o *Output) error {
		if o == nil {
			return fmt.Errorf("%w: nil output", ErrContractViolation)
		}
		b, err := AppendOutputJSON(nil, o)
		if err != nil {
			return fmt.Errorf("backend: encode output: %w", err)
		}
		return emit(b)
	}
	var finish func(error) error
	if w.cfg.ValidateStreams {
		send, finish = ValidateStream(send, ValidateStop(rc))
	}
	err := w.engine.Generate(rc, &req, send)
	if finish != nil {
		// finish returns Generate's error, joined with any violation.
		if err = finish(err); errors.Is(err, ErrContractViolation) {
			w.log.Error("backend: engine broke the stream contract", "request_id", rc.ID(), "err", err)
		}
	}
	if errors.Is(err, ErrDropStream) {
		// Fault injection: end like a crashed worker, without the final marker.
		w.log.Warn("backend: dropping the response stream (fault injection)", "request_id", rc.ID())
		rc.Kill()
	}
	return err
}
