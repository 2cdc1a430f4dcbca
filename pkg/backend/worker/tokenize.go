package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// serveTokenize serves backend.TokenizeEndpoint beside the worker's
// endpoint until ctx ends, when the card says preprocessing "engine"; the
// engine must then be a backend.ChatTokenizer. The returned function waits
// for the endpoint to stop.
func (w *server) serveTokenize(ctx context.Context) (stop func(), err error) {
	if w.cfg.Processing.Preprocessing != modelcard.ProcessingEngine {
		return func() {}, nil
	}
	tok, ok := w.engine.(backend.ChatTokenizer)
	if !ok {
		return nil, fmt.Errorf("worker: preprocessing %q needs an engine that tokenizes chat prompts (backend.ChatTokenizer); %T does not", modelcard.ProcessingEngine, w.engine)
	}
	ep := w.cfg.Endpoint
	ep.Name = backend.TokenizeEndpoint
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := w.rt.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
			return handleTokenize(rc, tok, payload, emit)
		}))
		if err != nil && !errors.Is(err, context.Canceled) {
			w.log.Error("worker: tokenize endpoint stopped; frontends cannot tokenize this model's chat prompts here", "err", err)
		}
	}()
	return func() { <-done }, nil
}

// handleTokenize answers one tokenize request with one TokenizeResponse.
func handleTokenize(rc *runtime.Context, tok backend.ChatTokenizer, payload []byte, emit func([]byte) error) error {
	var req backend.TokenizeRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return runtime.NewError(backend.TypeInvalidArgument, "worker: bad tokenize request: %v", err)
	}
	ids, err := tok.TokenizeChat(rc, &req)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []uint32{}
	}
	b, err := json.Marshal(backend.TokenizeResponse{Tokens: ids})
	if err != nil {
		return err
	}
	return emit(b)
}
