package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// serveLocalIndexes serves each dp rank's local KV index on
// worker_kv_indexer_query_dp{r} of the worker's component, so routers can
// fill gaps in the events they received and take a full dump when they
// discover the worker. It returns a function that waits for the endpoints
// to stop (they stop with ctx) and returns the first error.
func (w *server) serveLocalIndexes(ctx context.Context, local map[int]*kvblock.LocalIndex) func() error {
	var wg sync.WaitGroup
	errs := make([]error, 0, len(local))
	var mu sync.Mutex
	for rank, x := range local {
		ep := w.cfg.Endpoint
		ep.Name = kvblock.QueryEndpointName(uint32(rank))
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.rt.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
				return answerQuery(x, payload, emit)
			}))
			if err != nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	return func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}

// answerQuery answers one router query with one response item.
func answerQuery(x *kvblock.LocalIndex, payload []byte, emit func([]byte) error) error {
	var req kvblock.QueryRequest
	resp := kvblock.QueryResponse{}
	if err := json.Unmarshal(payload, &req); err != nil {
		resp.Error = "bad query: " + err.Error()
	} else {
		resp = x.Query(req.StartEventID, req.EndEventID)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return emit(b)
}
