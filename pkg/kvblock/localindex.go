package kvblock

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// RingSize is how many recent events a worker's local index keeps for
// routers that missed some (WORKER_KV_INDEXER_BUFFER_SIZE).
const RingSize = 1024

// QueryEndpointName returns the request-plane endpoint, on the worker's
// component, where routers query dp rank r's local index:
// worker_kv_indexer_query_dp{r}.
func QueryEndpointName(dpRank uint32) string {
	return fmt.Sprintf("worker_kv_indexer_query_dp%d", dpRank)
}

// LocalIndex is a worker's own record of one dp rank's cached blocks and
// of its last RingSize events. Routers ask it for the events they missed
// (a gap in event ids) or for a full dump when they discover the worker.
// It is safe for concurrent use.
type LocalIndex struct {
	workerID uint64
	dpRank   uint32

	mu     sync.Mutex
	blocks map[uint64]localBlock // block hash -> its parent and tokens hash
	order  uint64                // insertion counter, for dumps in store order
	ring   []RouterEvent         // the last events, oldest first
	start  int                   // index of the oldest event in ring
}

type localBlock struct {
	parent *uint64
	tokens uint64
	seq    uint64
}

// NewLocalIndex returns an empty index for one worker and dp rank.
func NewLocalIndex(workerID uint64, dpRank uint32) *LocalIndex {
	return &LocalIndex{workerID: workerID, dpRank: dpRank, blocks: map[uint64]localBlock{}}
}

// Apply records ev (an event this worker publishes) in the blocks and the
// ring. It returns an error when ev's id does not follow the previous one
// (the ring still takes it).
func (x *LocalIndex) Apply(ev KVCacheEvent) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	var err error
	if n := len(x.ring); n > 0 {
		if last := x.ring[(x.start+n-1)%len(x.ring)].Event.EventID; ev.EventID != last+1 {
			err = fmt.Errorf("kvblock: local index: event id %d after %d", ev.EventID, last)
		}
	}
	switch {
	case ev.Data.Stored != nil:
		parent := ev.Data.Stored.ParentHash
		for _, b := range ev.Data.Stored.Blocks {
			x.order++
			x.blocks[b.BlockHash] = localBlock{parent: parent, tokens: b.TokensHash, seq: x.order}
			h := b.BlockHash
			parent = &h
		}
	case ev.Data.Removed != nil:
		for _, h := range ev.Data.Removed.BlockHashes {
			delete(x.blocks, h)
		}
	case ev.Data.Cleared:
		clear(x.blocks)
	}
	re := RouterEvent{WorkerID: x.workerID, Event: ev}
	if len(x.ring) < RingSize {
		x.ring = append(x.ring, re)
	} else {
		x.ring[x.start] = re
		x.start = (x.start + 1) % RingSize
	}
	return err
}

// Query answers a router's request: the events [start, end] (inclusive;
// end nil = the newest) from the ring, or a dump of every cached block when
// start is nil, the ring is empty, or start is older than the ring.
func (x *LocalIndex) Query(start, end *uint64) QueryResponse {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := len(x.ring)
	if start == nil || n == 0 {
		return QueryResponse{TreeDump: x.dumpLocked()}
	}
	oldest := x.ring[x.start].Event.EventID
	newest := x.ring[(x.start+n-1)%n].Event.EventID
	last := newest
	if end != nil {
		last = *end
	}
	switch {
	case end != nil && *end < *start:
		return QueryResponse{InvalidRange: &InvalidRange{StartID: *start, EndID: *end}}
	case *start > newest:
		return QueryResponse{TooNew: &TooNew{RequestedStart: *start, RequestedEnd: end, NewestAvailable: newest}}
	case *start < oldest:
		return QueryResponse{TreeDump: x.dumpLocked()}
	}
	if last > newest {
		last = newest
	}
	events := make([]RouterEvent, 0, last-*start+1)
	for i := 0; i < n; i++ {
		re := x.ring[(x.start+i)%n]
		if id := re.Event.EventID; id >= *start && id <= last {
			events = append(events, re)
		}
	}
	return QueryResponse{Events: events}
}

// Dump returns every cached block as single-block stored events, parents
// before children, with synthetic event ids from 0 (the reference
// system's tree dump).
func (x *LocalIndex) Dump() []RouterEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.dumpLocked()
}

func (x *LocalIndex) dumpLocked() []RouterEvent {
	hashes := make([]uint64, 0, len(x.blocks))
	for h := range x.blocks {
		hashes = append(hashes, h)
	}
	// Store order puts every parent before its children: a block is
	// stored after its parent (the engine cannot cache a block whose
	// prefix it does not hold).
	sort.Slice(hashes, func(i, j int) bool { return x.blocks[hashes[i]].seq < x.blocks[hashes[j]].seq })
	out := make([]RouterEvent, 0, len(hashes))
	placed := make(map[uint64]bool, len(hashes))
	for i, h := range hashes {
		b := x.blocks[h]
		var parent *uint64
		if b.parent != nil {
			if !placed[*b.parent] {
				continue // an ancestor was evicted: the router could not place it
			}
			p := *b.parent
			parent = &p
		}
		placed[h] = true
		out = append(out, RouterEvent{WorkerID: x.workerID, Event: KVCacheEvent{
			EventID: uint64(i), DPRank: x.dpRank,
			Data: Stored(parent, StoredBlock{BlockHash: h, TokensHash: b.tokens}),
		}})
	}
	for i := range out {
		out[i].Event.EventID = uint64(i)
	}
	return out
}

// Len returns the number of cached blocks.
func (x *LocalIndex) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.blocks)
}

// QueryRequest asks a worker's local index for events (the reference
// system's WorkerKvQueryRequest). Bounds are inclusive; a nil start asks
// for a dump.
type QueryRequest struct {
	WorkerID     uint64  `json:"worker_id"`
	StartEventID *uint64 `json:"start_event_id"`
	EndEventID   *uint64 `json:"end_event_id"`
}

// QueryResponse is the answer (an externally tagged enum on the wire):
// exactly one field is set.
type QueryResponse struct {
	Events       []RouterEvent `json:"Events,omitempty"`
	TreeDump     []RouterEvent `json:"TreeDump,omitempty"`
	TooNew       *TooNew       `json:"TooNew,omitempty"`
	InvalidRange *InvalidRange `json:"InvalidRange,omitempty"`
	Error        string        `json:"Error,omitempty"`
}

// TooNew says the requested start is newer than anything the worker has.
type TooNew struct {
	RequestedStart  uint64  `json:"requested_start"`
	RequestedEnd    *uint64 `json:"requested_end"`
	NewestAvailable uint64  `json:"newest_available"`
}

// InvalidRange says the bounds are reversed.
type InvalidRange struct {
	StartID uint64 `json:"start_id"`
	EndID   uint64 `json:"end_id"`
}

// MarshalJSON writes exactly one variant; a response with no other
// variant set is a (possibly empty) tree dump.
func (r QueryResponse) MarshalJSON() ([]byte, error) {
	switch {
	case r.Events != nil:
		return json.Marshal(map[string]any{"Events": r.Events})
	case r.TooNew != nil:
		return json.Marshal(map[string]any{"TooNew": r.TooNew})
	case r.InvalidRange != nil:
		return json.Marshal(map[string]any{"InvalidRange": r.InvalidRange})
	case r.Error != "":
		return json.Marshal(map[string]any{"Error": r.Error})
	}
	dump := r.TreeDump
	if dump == nil {
		dump = []RouterEvent{}
	}
	return json.Marshal(map[string]any{"TreeDump": dump})
}
