package kv

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// eventEngine is a worker engine whose KV events the test publishes by
// hand, through the publisher the backend gives it (the one that feeds
// the worker's local index and the NATS event plane).
type eventEngine struct {
	pub chan backend.EventPublisher
}

func (e *eventEngine) Start(context.Context, uint64) (backend.Config, error) {
	return backend.Config{Model: "demo", KVBlockSize: 16, ContextLength: 4096}, nil
}

func (e *eventEngine) Generate(context.Context, *backend.Request, func(*backend.Output) error) error {
	return errors.New("eventEngine does not generate")
}

func (e *eventEngine) Cleanup(context.Context) error { return nil }
func (e *eventEngine) KVEventSources() []int         { return []int{0} }
func (e *eventEngine) SetEventPublisher(p backend.EventPublisher) {
	e.pub <- p
}

// recordingQuerier passes queries to the real querier (the request plane)
// and records what was asked.
type recordingQuerier struct {
	next Querier
	mu   sync.Mutex
	asks []string
}

func (q *recordingQuerier) Query(ctx context.Context, w Worker, req kvblock.QueryRequest) (kvblock.QueryResponse, error) {
	desc := "dump"
	if req.StartEventID != nil {
		desc = "range"
		if *req.StartEventID == 7 && *req.EndEventID == 8 {
			desc = "range 7-8"
		}
	}
	q.mu.Lock()
	q.asks = append(q.asks, desc)
	q.mu.Unlock()
	return q.next.Query(ctx, w, req)
}

func (q *recordingQuerier) queries() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.asks)
}

// A router that starts after a worker has cached blocks loads them from the
// worker's dump on the first event it hears; when events are lost on the
// way (core NATS drops messages for slow consumers and during reconnects)
// it notices the gap at the next event and fetches the missing ones from
// the worker's local index over the request plane. Everything here is
// real: an in-process NATS server, two runtimes, a backend worker serving
// its local index. Only the loss is staged, by dropping two messages after
// the router's subscription received them.
func TestEventSyncOverNATSLoadsDumpsAndFillsGaps(t *testing.T) {
	nats := testenv.StartNATS(t)
	mem := discovery.NewMemSpace()
	newRT := func() *runtime.DistributedRuntime {
		return runtimetest.Start(t, runtime.Config{Discovery: runtime.DiscoveryMem, RequestPlane: runtime.PlaneNATS,
			NATSServer: nats.URL, TCPHost: "127.0.0.1", GracePeriod: 50 * time.Millisecond}, runtime.Deps{MemSpace: mem})
	}
	workerRT, routerRT := newRT(), newRT()
	ep := runtime.EndpointID{Namespace: "ns", Component: "mocker", Name: "generate"}

	eng := &eventEngine{pub: make(chan backend.EventPublisher, 1)}
	wctx, stopWorker := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- worker.Run(wctx, workerRT, eng, worker.Config{Endpoint: ep, ModelPath: "../../../models/demo"})
	}()
	t.Cleanup(func() { stopWorker(); <-runErr })
	pub := <-eng.pub

	// The worker caches one chain of blocks, local hash 1000+i at depth i.
	var workerID uint64
	waitCtx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cl, err := routerRT.Endpoint(ep).Client(waitCtx)
	if err == nil {
		_, err = cl.WaitForInstances(waitCtx)
	}
	if err != nil {
		t.Fatal(err)
	}
	workerID = cl.InstanceIDs()[0]
	nextID := uint64(0)
	publish := func(data kvblock.EventData) {
		t.Helper()
		ev := kvblock.RouterEvent{WorkerID: workerID, Event: kvblock.KVCacheEvent{EventID: nextID, Data: data}}
		nextID++
		if err := pub.PublishKVEvent(t.Context(), 0, ev); err != nil {
			t.Fatal(err)
		}
	}
	block := func(i uint64) kvblock.StoredBlock {
		return kvblock.StoredBlock{BlockHash: 5000 + i, TokensHash: 1000 + i}
	}
	parent := func(i uint64) *uint64 { h := 5000 + i; return &h }
	chain := func(n int) []uint64 {
		local := make([]uint64, n)
		for i := range local {
			local[i] = 1000 + uint64(i)
		}
		return local
	}

	// Events 0-4, before any router listens: blocks 0-4.
	publish(kvblock.Stored(nil, block(0)))
	for i := uint64(1); i < 5; i++ {
		publish(kvblock.Stored(parent(i-1), block(i)))
	}

	idx := newIndexer(indexerOptions{})
	q := &recordingQuerier{next: NewRuntimeQuerier(routerRT, ep.Namespace, ep.Component)}
	es := newEventSync(idx, q, nil)
	subCtx, stopSub := context.WithCancel(t.Context())
	defer stopSub()
	var lostMu sync.Mutex
	var lost []uint64
	err = routerRT.Subscribe(subCtx, kvblock.KVEventsSubject(ep.Namespace, ep.Component), func(b []byte) {
		var ev kvblock.RouterEvent
		if err := kvblock.Unmarshal(b, &ev); err == nil && (ev.Event.EventID == 7 || ev.Event.EventID == 8) {
			lostMu.Lock()
			lost = append(lost, ev.Event.EventID)
			lostMu.Unlock()
			return
		}
		es.HandleMessage(subCtx, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitSubscriber(t, nats.URL, kvblock.KVEventsSubject(ep.Namespace, ep.Component))

	// Event 5 is the router's first: it loads blocks 0-4 from the dump.
	publish(kvblock.Stored(parent(4), block(5)))
	testenv.WaitFor(t, 5*time.Second, "the dump and event 5", func() bool {
		return idx.FindMatches(chain(10)).Scores[Worker{ID: workerID}] == 6
	})

	// Event 6 arrives; 7 (blocks 7-8) and 8 (block 5 evicted) are lost;
	// 9 reveals the gap.
	publish(kvblock.Stored(parent(5), block(6)))
	publish(kvblock.Stored(parent(6), block(7), block(8)))
	publish(kvblock.Removed(5005))
	publish(kvblock.Stored(parent(8), block(9)))
	// The router fetches the lost events and applies them before event
	// 9: blocks 0-4 from the dump, 5 gone (event 8), so the prefix stops
	// at 5; block 7, stored by a lost event, is known again: a request
	// whose chain skips the removed block cannot match it, but the
	// worker's block count tells: 0-4, 6, 7, 8, 9. (Asking for the range
	// is not enough to check: the answer is applied after it.)
	w := Worker{ID: workerID}
	testenv.WaitFor(t, 5*time.Second, "the gap to be filled: a 5-block prefix (block 5 removed by a lost event) and 9 blocks (0-4 and 6-9)", func() bool {
		lostMu.Lock()
		n := len(lost)
		lostMu.Unlock()
		return n == 2 && idx.FindMatches(chain(10)).Scores[w] == 5 && idx.FindMatches(chain(3)).TreeSizes[w] == 9
	})
	if got, want := q.queries(), []string{"dump", "range 7-8"}; !slices.Equal(got, want) {
		t.Errorf("queries %v, want %v", got, want)
	}

	// The worker leaves discovery: the router's owner removes it, and a
	// new event from a worker with that id would start from a dump again.
	es.RemoveWorker(workerID)
	idx.RemoveWorker(workerID)
	if got := idx.FindMatches(chain(3)).Scores[w]; got != 0 {
		t.Errorf("a removed worker still matches %d blocks", got)
	}
	publish(kvblock.Stored(parent(9), block(10)))
	testenv.WaitFor(t, 5*time.Second, "a fresh dump after removal", func() bool {
		return len(q.queries()) == 3 && idx.FindMatches(chain(3)).Scores[w] == 3
	})
}

// waitSubscriber waits until the NATS server at url has a subscriber on
// subject: a request there is answered "no responders" at once while
// nobody listens, and goes unanswered once someone does (an event-plane
// subscriber skips it: it is no envelope).
func waitSubscriber(t *testing.T, url, subject string) {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testenv.WaitFor(t, 5*time.Second, "a subscriber on "+subject, func() bool {
		_, err := nc.Request(subject, nil, 100*time.Millisecond)
		return !errors.Is(err, natsgo.ErrNoResponders)
	})
}
