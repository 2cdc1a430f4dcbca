package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// RuntimeQuerier queries workers' local KV indexes over the request plane:
// endpoint worker_kv_indexer_query_dp{r} of the workers' component.
type RuntimeQuerier struct {
	rt        *runtime.DistributedRuntime
	namespace string
	component string
	timeout   time.Duration

	mu      sync.Mutex
	clients map[uint32]*runtime.Client
}

// NewRuntimeQuerier returns a querier for the workers of one component.
func NewRuntimeQuerier(rt *runtime.DistributedRuntime, namespace, component string) *RuntimeQuerier {
	return &RuntimeQuerier{rt: rt, namespace: namespace, component: component, timeout: 5 * time.Second, clients: map[uint32]*runtime.Client{}}
}

func (q *RuntimeQuerier) client(ctx context.Context, rank uint32) (*runtime.Client, error) {
	q.mu.Lock()
	c := q.clients[rank]
	q.mu.Unlock()
	if c != nil {
		return c, nil
	}
	ep := runtime.EndpointID{Namespace: q.namespace, Component: q.component, Name: kvblock.QueryEndpointName(rank)}
	c, err := q.rt.Endpoint(ep).Client(ctx)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.clients[rank] = c
	q.mu.Unlock()
	return c, nil
}

// Query sends req to worker w's local index and returns its answer.
func (q *RuntimeQuerier) Query(ctx context.Context, w Worker, req kvblock.QueryRequest) (kvblock.QueryResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	c, err := q.client(ctx, w.DPRank)
	if err != nil {
		return kvblock.QueryResponse{}, fmt.Errorf("kv router: query client: %w", err)
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return kvblock.QueryResponse{}, err
	}
	var resp kvblock.QueryResponse
	got := false
	rc := runtime.NewContext(ctx, "")
	defer rc.Release()
	err = c.Call(rc, w.ID, payload, func(item []byte) error {
		got = true
		return json.Unmarshal(item, &resp)
	})
	if err != nil {
		return kvblock.QueryResponse{}, fmt.Errorf("kv router: query worker %x rank %d: %w", w.ID, w.DPRank, err)
	}
	if !got {
		return kvblock.QueryResponse{}, fmt.Errorf("kv router: query worker %x rank %d: empty answer", w.ID, w.DPRank)
	}
	return resp, nil
}
