package mocker

import (
	"container/list"
	"slices"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// blockID names a KV block: a full block by its sequence hash, or a
// partial (or uncacheable) block by a unique id (the reference system's
// UniqueBlock = FullBlock | PartialBlock).
type blockID struct {
	hash    uint64
	partial bool
}

// blockManager is the paged KV cache of one rank (§6.3). Active blocks
// are reference counted; blocks whose count drops to zero go to an LRU
// pool of inactive blocks that still count as prefix-cache hits and are
// evicted, oldest first, when room is needed. Capacity is counted over
// active + inactive blocks. Changes of full blocks are recorded as KV
// events (ids from 0, one per event) when events is true.
//
// Not safe for concurrent use: the owning rank's mutex guards it.
type blockManager struct {
	capacity int
	rank     uint32
	events   bool

	active   map[blockID]int
	inactive map[blockID]*list.Element
	lru      *list.List // of blockID; front = least recently used

	nextEventID uint64
	outbox      []kvblock.KVCacheEvent

	// blockSize, when > 0, makes the manager record the token ids of
	// each stored event's blocks (outTokens, parallel to outbox) for a
	// KVBatchPublisher; 0: no token ids are kept.
	blockSize int
	outTokens [][]uint32
	outLoras  []string // each stored event's LoRA adapter, parallel to outTokens
}

func newBlockManager(capacity int, rank uint32, events bool) *blockManager {
	return &blockManager{
		capacity: capacity,
		rank:     rank,
		events:   events,
		active:   make(map[blockID]int),
		inactive: make(map[blockID]*list.Element),
		lru:      list.New(),
	}
}

// activeBlocks is the number of blocks in use.
func (m *blockManager) activeBlocks() int { return len(m.active) }

// usedBlocks is the number of occupied blocks, active or inactive.
func (m *blockManager) usedBlocks() int { return len(m.active) + m.lru.Len() }

// cached reports whether a full block is present, active or inactive.
func (m *blockManager) cached(hash uint64) bool {
	id := blockID{hash: hash}
	if _, ok := m.active[id]; ok {
		return true
	}
	_, ok := m.inactive[id]
	return ok
}

// use acquires blocks in order (the Use signal): an active block gains a
// reference, an inactive one is reactivated, a missing one is inserted
// (evicting the least recently used inactive block when the cache is full)
// and, if full, reported as stored. local[i] is the local hash of full
// block blocks[i], and tokens (the sequence's ids, may be nil) hold block
// i's ids at [i*blockSize, (i+1)*blockSize). Runs of new full blocks
// become one stored event each, whose parent is the block before the run
// (nil at the start of blocks). If no room can be made, use releases what
// it acquired and returns false.
func (m *blockManager) use(blocks []blockID, local []uint64, tokens []uint32) bool {
	return m.useFor(blocks, local, tokens, "")
}

// useFor is use for the blocks of a request for LoRA adapter lora ("" for
// the base model), which their stored events name.
func (m *blockManager) useFor(blocks []blockID, local []uint64, tokens []uint32, lora string) bool {
	runStart := -1
	flush := func(end int) {
		if runStart < 0 {
			return
		}
		var parent *uint64
		if runStart > 0 && !blocks[runStart-1].partial {
			p := blocks[runStart-1].hash
			parent = &p
		}
		stored := make([]kvblock.StoredBlock, 0, end-runStart)
		for j := runStart; j < end; j++ {
			stored = append(stored, kvblock.StoredBlock{BlockHash: blocks[j].hash, TokensHash: local[j]})
		}
		m.emitTokens(kvblock.Stored(parent, stored...), m.blockTokens(tokens, runStart, end), lora)
		runStart = -1
	}
	for i, b := range blocks {
		if m.acquireExisting(b) {
			flush(i)
			continue
		}
		if m.usedBlocks() >= m.capacity && !m.evictOne() {
			flush(i)
			m.deref(blocks[:i])
			return false
		}
		m.active[b] = 1
		if b.partial {
			flush(i)
		} else if runStart < 0 {
			runStart = i
		}
	}
	flush(len(blocks))
	return true
}

// acquireExisting adds a reference to an active block or reactivates an
// inactive one; it reports false when the block is not cached.
func (m *blockManager) acquireExisting(b blockID) bool {
	if n, ok := m.active[b]; ok {
		m.active[b] = n + 1
		return true
	}
	if e, ok := m.inactive[b]; ok {
		m.lru.Remove(e)
		delete(m.inactive, b)
		m.active[b] = 1
		return true
	}
	return false
}

// evictOne drops the least recently used inactive block, reporting it as
// removed; false when there is none.
func (m *blockManager) evictOne() bool {
	e := m.lru.Front()
	if e == nil {
		return false
	}
	b := m.lru.Remove(e).(blockID)
	delete(m.inactive, b)
	if !b.partial {
		m.emit(kvblock.Removed(b.hash))
	}
	return true
}

// deref releases one reference of each block, last block first, so that
// a sequence's suffix enters the LRU pool before its prefix and is evicted
// first. A full block without references becomes inactive; a partial one
// is destroyed.
func (m *blockManager) deref(blocks []blockID) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		n, ok := m.active[b]
		if !ok {
			continue
		}
		if n > 1 {
			m.active[b] = n - 1
			continue
		}
		delete(m.active, b)
		if !b.partial {
			m.inactive[b] = m.lru.PushBack(b)
		}
	}
}

// promote turns the partial block from into the full block to (the
// Promote signal): an already cached full block gains the reference,
// otherwise the block is stored with the given parent and local hash.
// tokens are the block's ids (may be nil).
func (m *blockManager) promote(from blockID, to uint64, parent *uint64, local uint64, tokens []uint32) {
	m.promoteFor(from, to, parent, local, tokens, "")
}

// promoteFor is promote for a block of a request for LoRA adapter lora.
func (m *blockManager) promoteFor(from blockID, to uint64, parent *uint64, local uint64, tokens []uint32, lora string) {
	delete(m.active, from)
	full := blockID{hash: to}
	if m.acquireExisting(full) {
		return
	}
	m.active[full] = 1
	m.emitTokens(kvblock.Stored(parent, kvblock.StoredBlock{BlockHash: to, TokensHash: local}), m.blockTokens(tokens, 0, 1), lora)
}

// blockTokens returns a copy of the ids of blocks [from, to) of tokens,
// or nil when the manager keeps no token ids or tokens are too short.
func (m *blockManager) blockTokens(tokens []uint32, from, to int) []uint32 {
	bs := m.blockSize
	if bs <= 0 || !m.events || len(tokens) < to*bs {
		return nil
	}
	return slices.Clone(tokens[from*bs : to*bs])
}

// emit records an event with the next id.
func (m *blockManager) emit(data kvblock.EventData) { m.emitTokens(data, nil, "") }

// emitTokens records an event with the next id and, when the manager
// keeps token ids, its blocks' ids (nil for all but stored events) and
// their LoRA adapter.
func (m *blockManager) emitTokens(data kvblock.EventData, tokens []uint32, lora string) {
	if !m.events {
		return
	}
	m.outbox = append(m.outbox, kvblock.KVCacheEvent{EventID: m.nextEventID, Data: data, DPRank: m.rank})
	if m.blockSize > 0 {
		m.outTokens = append(m.outTokens, tokens)
		m.outLoras = append(m.outLoras, lora)
	}
	m.nextEventID++
}

// takeEvents returns and clears the recorded events.
func (m *blockManager) takeEvents() []kvblock.KVCacheEvent {
	events, _, _ := m.takeBatch()
	return events
}

// takeBatch returns and clears the recorded events and, when the manager
// keeps token ids, the ids of each event's blocks and their LoRA adapter
// (parallel to events; nil otherwise).
func (m *blockManager) takeBatch() ([]kvblock.KVCacheEvent, [][]uint32, []string) {
	events, tokens, loras := m.outbox, m.outTokens, m.outLoras
	m.outbox, m.outTokens, m.outLoras = nil, nil, nil
	return events, tokens, loras
}
