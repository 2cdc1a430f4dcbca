package kv

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// recordingIndex records what eventSync asks of the indexer.
type recordingIndex struct {
	mu  sync.Mutex
	ops []string
}

func (r *recordingIndex) add(s string) { r.mu.Lock(); r.ops = append(r.ops, s); r.mu.Unlock() }
func (r *recordingIndex) Apply(_ context.Context, ev kvblock.RouterEvent) error {
	r.add(fmt.Sprintf("apply %x/%d #%d", ev.WorkerID, ev.Event.DPRank, ev.Event.EventID))
	return nil
}
func (r *recordingIndex) ClearWorker(w Worker)   { r.add(fmt.Sprintf("clear %x/%d", w.ID, w.DPRank)) }
func (r *recordingIndex) RemoveWorker(id uint64) { r.add(fmt.Sprintf("remove %x", id)) }

// localQuerier answers from real worker-side local indexes.
type localQuerier struct {
	idx     map[Worker]*kvblock.LocalIndex
	queries []string
}

func (q *localQuerier) Query(_ context.Context, w Worker, req kvblock.QueryRequest) (kvblock.QueryResponse, error) {
	x := q.idx[w]
	if x == nil {
		return kvblock.QueryResponse{}, fmt.Errorf("no worker %x", w.ID)
	}
	desc := "dump"
	if req.StartEventID != nil {
		desc = fmt.Sprintf("[%d,%d]", *req.StartEventID, *req.EndEventID)
	}
	q.queries = append(q.queries, desc)
	return x.Query(req.StartEventID, req.EndEventID), nil
}

func TestEventSyncDumpsGapsAndRemovals(t *testing.T) {
	w := Worker{ID: 0xa, DPRank: 1}
	local := kvblock.NewLocalIndex(w.ID, w.DPRank)
	var events []kvblock.RouterEvent
	var parent *uint64
	for i := uint64(0); i < 8; i++ {
		ev := kvblock.KVCacheEvent{EventID: i, DPRank: 1, Data: kvblock.Stored(parent, kvblock.StoredBlock{BlockHash: 100 + i, TokensHash: i})}
		if err := local.Apply(ev); err != nil {
			t.Fatal(err)
		}
		events = append(events, kvblock.RouterEvent{WorkerID: w.ID, Event: ev})
		h := 100 + i
		parent = &h
	}
	idx := &recordingIndex{}
	q := &localQuerier{idx: map[Worker]*kvblock.LocalIndex{w: local}}
	s := newEventSync(idx, q, nil)
	ctx := context.Background()

	s.Handle(ctx, events[2]) // first contact: a dump, then the event
	s.Handle(ctx, events[3]) // in order: applied as is
	s.Handle(ctx, events[6]) // a gap: 4 and 5 are fetched first
	s.Handle(ctx, events[6]) // a duplicate: applied, no query
	s.RemoveWorker(w.ID)
	s.Handle(ctx, events[7]) // a worker seen again: a fresh dump

	wantQueries := []string{"dump", "[4,5]", "dump"}
	if !reflect.DeepEqual(q.queries, wantQueries) {
		t.Errorf("queries %v, want %v", q.queries, wantQueries)
	}
	var dump []string
	for i := 0; i < 8; i++ {
		dump = append(dump, fmt.Sprintf("apply a/1 #%d", i))
	}
	want := append([]string{"clear a/1"}, dump...)
	want = append(want, "apply a/1 #2", "apply a/1 #3", "apply a/1 #4", "apply a/1 #5", "apply a/1 #6", "apply a/1 #6", "remove a", "clear a/1")
	want = append(want, dump...)
	want = append(want, "apply a/1 #7")
	if !reflect.DeepEqual(idx.ops, want) {
		t.Errorf("indexer saw\n%v\nwant\n%v", idx.ops, want)
	}
}

func TestEventSyncSkipsBadMessagesAndSurvivesFailedRecovery(t *testing.T) {
	idx := &recordingIndex{}
	s := newEventSync(idx, &localQuerier{idx: map[Worker]*kvblock.LocalIndex{}}, nil)
	s.HandleMessage(context.Background(), []byte(`{"worker_id":5}`)) // JSON: not the event plane's encoding
	msg, err := kvblock.Marshal(kvblock.RouterEvent{WorkerID: 5, Event: kvblock.KVCacheEvent{EventID: 9, Data: kvblock.Cleared()}})
	if err != nil {
		t.Fatal(err)
	}
	s.HandleMessage(context.Background(), msg)
	if want := []string{"apply 5/0 #9"}; !reflect.DeepEqual(idx.ops, want) {
		t.Errorf("ops %v, want %v: an event is applied even when its recovery failed", idx.ops, want)
	}
}
