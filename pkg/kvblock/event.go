package kvblock

// RouterEvent is one KV-cache event of one worker as the router consumes
// it (the reference system's RouterEvent): the worker's instance id and
// the event.
type RouterEvent struct {
	// WorkerID is the publishing worker's discovery (lease) instance id.
	WorkerID uint64 `json:"worker_id"`
	// Event is the cache event.
	Event KVCacheEvent `json:"event"`
}

// KVCacheEvent is one change to the KV cache of one data-parallel rank.
type KVCacheEvent struct {
	// EventID increases by one per event of a (worker, dp rank) publisher,
	// starting at 0.
	EventID uint64 `json:"event_id"`
	// Data is what changed.
	Data EventData `json:"data"`
	// DPRank is the data-parallel rank; 0 when absent on the wire.
	DPRank uint32 `json:"dp_rank"`
}

// Event kinds as spelled on the wire (the externally tagged variant names).
const (
	KindStored  = "stored"
	KindRemoved = "removed"
	KindCleared = "cleared"
)

// EventData is the externally tagged KvCacheEventData: exactly one of
// Stored, Removed or Cleared is set. On the wire it is
// {"stored":{...}}, {"removed":{...}} or the bare string "cleared".
type EventData struct {
	// Stored lists newly cached full blocks.
	Stored *StoreData
	// Removed lists evicted blocks.
	Removed *RemoveData
	// Cleared means every block of the publisher was dropped.
	Cleared bool
}

// StoreData is the payload of a stored event: consecutive full blocks of
// one sequence, the first one's parent given by ParentHash.
type StoreData struct {
	// ParentHash is the block hash of the block preceding Blocks[0], or
	// nil when Blocks[0] is the first block of its sequence.
	ParentHash *uint64 `json:"parent_hash"`
	// Blocks are the stored blocks in sequence order.
	Blocks []StoredBlock `json:"blocks"`
	// StartPosition is the absolute block position of Blocks[0] (E2 only;
	// nil when absent).
	StartPosition *uint32 `json:"start_position,omitempty"`
}

// StoredBlock is one stored block: the engine's own (chained) block hash
// and the router-compatible local hash of the block's tokens.
type StoredBlock struct {
	// BlockHash is the engine's block hash (ExternalSequenceBlockHash);
	// for the mocker, the chained sequence hash of SeqHashes.
	BlockHash uint64 `json:"block_hash"`
	// TokensHash is LocalBlockHash of the block's tokens.
	TokensHash uint64 `json:"tokens_hash"`
	// MMExtraInfo is multimodal metadata, nil when absent.
	MMExtraInfo *MMExtraInfo `json:"mm_extra_info,omitempty"`
}

// MMExtraInfo is a block's multimodal metadata: the media objects whose
// embeddings fall in the block.
type MMExtraInfo struct {
	// MMObjects are the media objects.
	MMObjects []MMObject `json:"mm_objects"`
}

// MMObject is one media object: the hash of its content and the token
// ranges ([start, end] pairs) it covers.
type MMObject struct {
	// MMHash identifies the object's content.
	MMHash uint64 `json:"mm_hash"`
	// Offsets are [start, end] token ranges.
	Offsets [][]uint64 `json:"offsets"`
}

// RemoveData is the payload of a removed event.
type RemoveData struct {
	// BlockHashes are the engine block hashes of the removed blocks.
	BlockHashes []uint64 `json:"block_hashes"`
}

// Stored returns the data of a stored event; parent is nil for blocks
// that start a sequence.
func Stored(parent *uint64, blocks ...StoredBlock) EventData {
	return EventData{Stored: &StoreData{ParentHash: parent, Blocks: blocks}}
}

// Removed returns the data of a removed event.
func Removed(blockHashes ...uint64) EventData {
	return EventData{Removed: &RemoveData{BlockHashes: blockHashes}}
}

// Cleared returns the data of a cleared event.
func Cleared() EventData { return EventData{Cleared: true} }

// Kind returns KindStored, KindRemoved, KindCleared, or "" for the zero
// value.
func (d EventData) Kind() string {
	switch {
	case d.Stored != nil:
		return KindStored
	case d.Removed != nil:
		return KindRemoved
	case d.Cleared:
		return KindCleared
	}
	return ""
}
