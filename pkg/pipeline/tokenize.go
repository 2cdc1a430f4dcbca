package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// tokenizeWait bounds the wait for a worker that serves the tokenize
// endpoint (a worker's card may be seen before its tokenize record).
const tokenizeWait = 5 * time.Second

// workerTokenizer is the preprocessor's engine tokenizer
// (preprocessor.Options.EngineTokenizer, a backend.ChatTokenizer) for a
// model whose card says preprocessing "engine": it asks one of the
// model's workers, on its tokenize endpoint (backend.TokenizeEndpoint),
// round-robin, and tries the next when a worker cannot answer. The
// request goes as it is: a conversation, or for a model whose card has
// no tokenizer a text prompt (TokenizeRequest.Prompt, AddSpecialTokens).
// The engine refusing it (TypeInvalidArgument) is returned at once.
type workerTokenizer struct {
	rt     *runtime.DistributedRuntime
	ep     runtime.EndpointID // the tokenize endpoint
	serves func(id uint64) bool
	next   atomic.Uint64
}

func newWorkerTokenizer(rt *runtime.DistributedRuntime, ep runtime.EndpointID, serves func(uint64) bool) *workerTokenizer {
	ep.Name = backend.TokenizeEndpoint
	return &workerTokenizer{rt: rt, ep: ep, serves: serves}
}

// TokenizeChat returns the engine's prompt tokens for req (a
// conversation or a text).
func (t *workerTokenizer) TokenizeChat(ctx context.Context, req *backend.TokenizeRequest) ([]uint32, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, tokenizeWait)
	defer cancel()
	client, err := t.rt.Endpoint(t.ep).Client(wctx)
	if err != nil {
		return nil, fmt.Errorf("pipeline: tokenize endpoint %s: %w", t.ep.Path(), err)
	}
	ids, err := t.candidates(wctx, client)
	if err != nil {
		return nil, err
	}
	start := int(t.next.Add(1))
	var errs []error
	for k := range ids {
		id := ids[(start+k)%len(ids)]
		tokens, err := t.call(ctx, client, id, payload)
		if err == nil {
			return tokens, nil
		}
		if errors.Is(err, backend.ErrInvalidArgument) || ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("worker %x: %w", id, err))
	}
	return nil, fmt.Errorf("pipeline: no worker could tokenize the prompt: %w", errors.Join(errs...))
}

// candidates waits until the endpoint lists workers of the model.
func (t *workerTokenizer) candidates(ctx context.Context, client *runtime.Client) ([]uint64, error) {
	for {
		changed := client.Changed()
		var ids []uint64
		for _, id := range client.Available() {
			if t.serves(id) {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			return ids, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, runtime.NewError(runtime.TypeCannotConnect, "no worker of the model serves the tokenize endpoint %s (its engine tokenizes the model's prompts): %v", t.ep.Path(), context.Cause(ctx))
		}
	}
}

// call asks one worker.
func (t *workerTokenizer) call(ctx context.Context, client *runtime.Client, id uint64, payload []byte) ([]uint32, error) {
	rc := runtime.NewContext(ctx, "")
	defer rc.Release()
	var resp *backend.TokenizeResponse
	err := client.Call(rc, id, payload, func(item []byte) error {
		var r backend.TokenizeResponse
		if err := json.Unmarshal(item, &r); err != nil {
			return fmt.Errorf("bad tokenize answer: %w", err)
		}
		resp = &r
		return nil
	})
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("the worker sent no tokenize answer")
	}
	return resp.Tokens, nil
}
