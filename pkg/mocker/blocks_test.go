package mocker

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

func full(h uint64) blockID { return blockID{hash: h} }

func ptr(v uint64) *uint64 { return &v }

// data returns the data of events, dropping the ids (checked separately).
func data(evs []kvblock.KVCacheEvent) []kvblock.EventData {
	var out []kvblock.EventData
	for _, e := range evs {
		out = append(out, e.Data)
	}
	return out
}

func TestBlockManagerPrefixHit(t *testing.T) {
	m := newBlockManager(10, 0, true)
	if !m.use([]blockID{full(1), full(2), full(3)}, []uint64{11, 12, 13}, nil) {
		t.Fatal("use failed")
	}
	want := []kvblock.EventData{kvblock.Stored(nil,
		kvblock.StoredBlock{BlockHash: 1, TokensHash: 11},
		kvblock.StoredBlock{BlockHash: 2, TokensHash: 12},
		kvblock.StoredBlock{BlockHash: 3, TokensHash: 13})}
	if diff := cmp.Diff(want, data(m.takeEvents())); diff != "" {
		t.Fatalf("first use (-want +got):\n%s", diff)
	}

	// The same prefix again, while active: references only.
	m.use([]blockID{full(1), full(2)}, []uint64{11, 12}, nil)
	if evs := m.takeEvents(); len(evs) != 0 || m.usedBlocks() != 3 || m.active[full(1)] != 2 {
		t.Fatalf("repeat: events %v, used %d, ref %d", evs, m.usedBlocks(), m.active[full(1)])
	}

	// Released to the inactive pool, then reused: a hit, no event.
	m.deref([]blockID{full(1), full(2)})
	m.deref([]blockID{full(1), full(2), full(3)})
	if m.activeBlocks() != 0 || m.usedBlocks() != 3 || !m.cached(2) {
		t.Fatalf("after release: active %d, used %d", m.activeBlocks(), m.usedBlocks())
	}
	m.use([]blockID{full(1), full(2), full(4), {hash: 99, partial: true}}, []uint64{11, 12, 14}, nil)
	want = []kvblock.EventData{kvblock.Stored(ptr(2), kvblock.StoredBlock{BlockHash: 4, TokensHash: 14})}
	if diff := cmp.Diff(want, data(m.takeEvents())); diff != "" {
		t.Fatalf("shared prefix (-want +got):\n%s", diff)
	}
	if m.usedBlocks() != 5 || m.activeBlocks() != 4 {
		t.Fatalf("used %d active %d, want 5 and 4", m.usedBlocks(), m.activeBlocks())
	}
}

func TestBlockManagerLRUEviction(t *testing.T) {
	m := newBlockManager(3, 2, true)
	for _, h := range []uint64{1, 2, 3} {
		m.use([]blockID{full(h)}, []uint64{h + 10}, nil)
		m.deref([]blockID{full(h)})
	}
	m.use([]blockID{full(2)}, []uint64{12}, nil) // 2 is recently used again
	m.deref([]blockID{full(2)})
	m.takeEvents()

	if !m.use([]blockID{full(4), full(5)}, []uint64{14, 15}, nil) {
		t.Fatal("use failed")
	}
	want := []kvblock.EventData{kvblock.Removed(1), kvblock.Removed(3),
		kvblock.Stored(nil, kvblock.StoredBlock{BlockHash: 4, TokensHash: 14}, kvblock.StoredBlock{BlockHash: 5, TokensHash: 15})}
	if diff := cmp.Diff(want, data(m.takeEvents())); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if !m.cached(2) || m.cached(1) || m.cached(3) {
		t.Error("wrong blocks evicted")
	}

	// Full of active blocks: use fails and gives back what it took.
	m.use([]blockID{full(2)}, []uint64{12}, nil)
	if m.use([]blockID{full(6)}, []uint64{16}, nil) {
		t.Fatal("use succeeded on a full cache")
	}
	if m.usedBlocks() != 3 || m.activeBlocks() != 3 {
		t.Fatalf("after failure: used %d, active %d", m.usedBlocks(), m.activeBlocks())
	}
	if m.use([]blockID{full(2), full(7)}, []uint64{12, 17}, nil) || m.active[full(2)] != 1 {
		t.Fatalf("failed use kept a reference: %d", m.active[full(2)])
	}
}

func TestBlockManagerPromote(t *testing.T) {
	m := newBlockManager(4, 0, true)
	p1, p2 := blockID{hash: 1, partial: true}, blockID{hash: 2, partial: true}
	m.use([]blockID{full(10), p1}, []uint64{20}, nil)
	m.use([]blockID{full(10), p2}, []uint64{20}, nil)
	m.takeEvents()
	m.promote(p1, 11, ptr(10), 21, nil)
	m.promote(p2, 11, ptr(10), 21, nil) // same content: a reference, no event
	want := []kvblock.EventData{kvblock.Stored(ptr(10), kvblock.StoredBlock{BlockHash: 11, TokensHash: 21})}
	if diff := cmp.Diff(want, data(m.takeEvents())); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if m.active[full(11)] != 2 || m.usedBlocks() != 2 {
		t.Fatalf("ref %d, used %d", m.active[full(11)], m.usedBlocks())
	}
	// Partial blocks are destroyed on release, full ones kept.
	m.use([]blockID{{hash: 3, partial: true}}, nil, nil)
	m.deref([]blockID{{hash: 3, partial: true}})
	if m.usedBlocks() != 2 {
		t.Fatalf("partial block survived release: used %d", m.usedBlocks())
	}
}

func TestBlockManagerEventIDs(t *testing.T) {
	m := newBlockManager(2, 3, true)
	for h := range uint64(4) {
		m.use([]blockID{full(h)}, []uint64{h}, nil)
		m.deref([]blockID{full(h)})
	}
	evs := m.takeEvents()
	// stored 0, stored 1, removed 0 + stored 2, removed 1 + stored 3.
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6", len(evs))
	}
	for i, e := range evs {
		if e.EventID != uint64(i) || e.DPRank != 3 {
			t.Errorf("event %d: id %d rank %d", i, e.EventID, e.DPRank)
		}
	}
	if m.use([]blockID{full(9)}, []uint64{9}, nil); m.takeEvents()[0].EventID != 6 {
		t.Error("ids do not continue across takeEvents")
	}

	quiet := newBlockManager(2, 0, false)
	quiet.use([]blockID{full(1)}, []uint64{1}, nil)
	if evs := quiet.takeEvents(); len(evs) != 0 {
		t.Errorf("events without prefix caching: %v", evs)
	}
}
