package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// kvEngine publishes one stored block per request, chained, on dp rank 0.
type kvEngine struct {
	scripted
	mu   sync.Mutex
	pub  backend.EventPublisher
	next uint64
	id   uint64
}

func (e *kvEngine) KVEventSources() []int                      { return []int{0} }
func (e *kvEngine) SetEventPublisher(p backend.EventPublisher) { e.pub = p }

func (e *kvEngine) Start(ctx context.Context, id uint64) (backend.Config, error) {
	e.id = id
	return e.scripted.Start(ctx, id)
}

func (e *kvEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	e.mu.Lock()
	var parent *uint64
	if e.next > 0 {
		p := 100 + e.next - 1
		parent = &p
	}
	ev := kvblock.RouterEvent{WorkerID: e.id, Event: kvblock.KVCacheEvent{EventID: e.next,
		Data: kvblock.Stored(parent, kvblock.StoredBlock{BlockHash: 100 + e.next, TokensHash: 7})}}
	e.next++
	e.mu.Unlock()
	if err := e.pub.PublishKVEvent(ctx, 0, ev); err != nil {
		return err
	}
	return emit(backend.Length(1))
}

func TestWorkerServesItsLocalKVIndex(t *testing.T) {
	eng := &kvEngine{}
	h := newHarness(t, eng, worker.Config{})
	h.connect(t)
	for range 3 {
		if _, err := h.generate(runtime.NewContext(t.Context(), ""), request(1), nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	qep := testEP
	qep.Name = kvblock.QueryEndpointName(0)
	cl, err := h.caller.Endpoint(qep).Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cl.WaitForInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	query := func(start, end *uint64) kvblock.QueryResponse {
		t.Helper()
		b, _ := json.Marshal(kvblock.QueryRequest{WorkerID: ids[0], StartEventID: start, EndEventID: end})
		var resp kvblock.QueryResponse
		err := cl.Call(runtime.NewContext(ctx, ""), ids[0], b, func(item []byte) error { return json.Unmarshal(item, &resp) })
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	dump := query(nil, nil).TreeDump
	if len(dump) != 3 || dump[0].Event.Data.Stored.ParentHash != nil || *dump[2].Event.Data.Stored.ParentHash != 101 {
		t.Fatalf("dump %+v", dump)
	}
	one, two := uint64(1), uint64(2)
	if ev := query(&one, &two).Events; len(ev) != 2 || ev[0].Event.EventID != 1 || ev[1].Event.EventID != 2 {
		t.Fatalf("events [1,2]: %+v", ev)
	}
}
