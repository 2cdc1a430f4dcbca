package kvblock

import (
	"encoding/json"
	"reflect"
	"testing"
)

func stored(id uint64, parent *uint64, hashes ...uint64) KVCacheEvent {
	var blocks []StoredBlock
	for _, h := range hashes {
		blocks = append(blocks, StoredBlock{BlockHash: h, TokensHash: h * 10})
	}
	return KVCacheEvent{EventID: id, Data: Stored(parent, blocks...)}
}

func ptr(v uint64) *uint64 { return &v }

func TestLocalIndexQueries(t *testing.T) {
	x := NewLocalIndex(7, 0)
	for _, ev := range []KVCacheEvent{
		stored(0, nil, 1, 2, 3),
		stored(1, ptr(3), 4),
		{EventID: 2, Data: Removed(2)},
		stored(3, nil, 9),
	} {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := x.Query(ptr(1), ptr(2)); len(got.Events) != 2 || got.Events[0].Event.EventID != 1 || got.Events[1].WorkerID != 7 {
		t.Errorf("range [1,2]: %+v", got)
	}
	if got := x.Query(ptr(2), nil); len(got.Events) != 2 {
		t.Errorf("open range from 2: %+v", got)
	}
	if got := x.Query(ptr(9), nil); got.TooNew == nil || got.TooNew.NewestAvailable != 3 {
		t.Errorf("too new: %+v", got)
	}
	if got := x.Query(ptr(3), ptr(1)); got.InvalidRange == nil {
		t.Errorf("reversed: %+v", got)
	}
	// Block 2 was removed, so 3 and 4 (its descendants) cannot be placed:
	// the dump holds 1 and 9 only, parents first, ids from 0.
	dump := x.Query(nil, nil).TreeDump
	var got []uint64
	for i, ev := range dump {
		if ev.Event.EventID != uint64(i) || len(ev.Event.Data.Stored.Blocks) != 1 {
			t.Fatalf("dump event %d: %+v", i, ev)
		}
		got = append(got, ev.Event.Data.Stored.Blocks[0].BlockHash)
	}
	if !reflect.DeepEqual(got, []uint64{1, 9}) {
		t.Errorf("dump blocks %v, want [1 9]", got)
	}
}

func TestLocalIndexRingKeepsTheLastEvents(t *testing.T) {
	x := NewLocalIndex(1, 2)
	var parent *uint64
	for i := uint64(0); i < RingSize+10; i++ {
		if err := x.Apply(stored(i, parent, 1000+i)); err != nil {
			t.Fatal(err)
		}
		parent = ptr(1000 + i)
	}
	if got := x.Query(ptr(5), ptr(6)); got.TreeDump == nil || len(got.TreeDump) != RingSize+10 {
		t.Errorf("a start older than the ring gives a dump of every block: %d events", len(got.TreeDump))
	}
	if got := x.Query(ptr(RingSize+9), nil); len(got.Events) != 1 || got.Events[0].Event.DPRank != 0 {
		t.Errorf("newest: %+v", got)
	}
	if err := x.Apply(stored(RingSize+20, nil, 5)); err == nil {
		t.Error("a gap in the worker's own event ids must be reported")
	}
	dump := x.Dump()
	if dump[0].Event.DPRank != 2 || dump[0].Event.Data.Stored.ParentHash != nil {
		t.Errorf("first dump event %+v: want dp rank 2 and a root block", dump[0])
	}
}

func TestQueryResponseJSON(t *testing.T) {
	for _, c := range []struct {
		r    QueryResponse
		want string
	}{
		{QueryResponse{}, `{"TreeDump":[]}`},
		{QueryResponse{Events: []RouterEvent{}}, `{"Events":[]}`},
		{QueryResponse{TooNew: &TooNew{RequestedStart: 5, NewestAvailable: 3}}, `{"TooNew":{"requested_start":5,"requested_end":null,"newest_available":3}}`},
		{QueryResponse{Error: "boom"}, `{"Error":"boom"}`},
	} {
		b, err := json.Marshal(c.r)
		if err != nil || string(b) != c.want {
			t.Errorf("%s (%v), want %s", b, err, c.want)
		}
		var back QueryResponse
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		b2, _ := json.Marshal(back)
		if string(b2) != c.want {
			t.Errorf("round trip %s, want %s", b2, c.want)
		}
	}
}
