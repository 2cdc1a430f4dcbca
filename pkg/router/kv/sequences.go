package kv

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// errDuplicateRequest is returned by sequences.Add for a request id that is
// already active.
var errDuplicateRequest = errors.New("kv: request already active")

// defaultSequenceExpiry is the period of the lazy force-expiry of leaked
// requests: a request still active two ticks after it was first seen is
// freed (so after 300 to 600 s).
const defaultSequenceExpiry = 300 * time.Second

// sequencesConfig configures a sequences.
type sequencesConfig struct {
	// BlockSize is the KV block size in tokens; it must be > 0.
	BlockSize int
	// TrackActiveBlocks counts the blocks of active requests as decode
	// load (--router-track-active-blocks, on by default in
	// defaultSequencesConfig). When false, tracking hashes are ignored and
	// every worker's active and new blocks are 0.
	TrackActiveBlocks bool
	// Expiry is the force-expiry period; 0 means defaultSequenceExpiry.
	Expiry time.Duration
	// RouterID identifies this router in replica-sync events; events
	// carrying it are ignored by Apply.
	RouterID uint64
}

// defaultSequencesConfig returns the reference defaults for blockSize:
// active-block tracking on, 300 s expiry.
func defaultSequencesConfig(blockSize int) sequencesConfig {
	return sequencesConfig{BlockSize: blockSize, TrackActiveBlocks: true, Expiry: defaultSequenceExpiry}
}

// sequencesDeps are the hooks and collaborators of a sequences; every
// field may be nil.
type sequencesDeps struct {
	// Publish receives a sequenceEvent for each local Add, prefill
	// completion and Free, before it is applied (--router-replica-sync).
	// It runs on the caller's goroutine and must not block.
	Publish func(sequenceEvent)
	// OnLoad receives the load of a (worker, dp rank) after every change
	// to it, for the worker gauges and the kv_metrics subject. It runs
	// with the tracker's lock held: it must not block or call back into
	// the sequences.
	OnLoad func(activeLoad)
	// Now is the clock for force-expiry; nil means time.Now.
	Now func() time.Time
	// Logger receives accounting anomalies; nil discards.
	Logger *slog.Logger
}

// activeRequest is a request routed to a worker, as sequences.Add takes
// it.
type activeRequest struct {
	// ID is the request id; unique among active requests.
	ID string
	// Worker is the (worker, dp rank) it was routed to.
	Worker Worker
	// Hashes are the tracking hashes of its full prompt blocks (see
	// trackingHashes); ignored when active-block tracking is off.
	Hashes []uint64
	// ISL is the prompt length in tokens.
	ISL int
	// Overlap is the worker's cached prefix in blocks (the selection's
	// OverlapBlocks).
	Overlap uint32
	// ExpectedOutputTokens is the expected output length, 0 if unknown;
	// it sets the decay of output blocks.
	ExpectedOutputTokens int
	// LoraName is the adapter name, carried in replica events.
	LoraName string
}

// sequences tracks, per (worker, dp rank), the requests routed and not yet
// finished, and the load they add: queued prompt tokens until the first
// output token, and the distinct KV blocks they reference until they end
// (the reference system's "slot manager"). Safe for concurrent use; it
// owns no goroutines.
type Sequences struct {
	cfg  sequencesConfig
	deps sequencesDeps
	log  *slog.Logger

	mu       sync.Mutex
	trackers map[Worker]*seqTracker
	owner    map[string]Worker // request id → worker
}

// newSequences returns an empty tracker.
func newSequences(cfg sequencesConfig, deps sequencesDeps) (*Sequences, error) {
	if cfg.BlockSize <= 0 {
		return nil, fmt.Errorf("kv: sequences: block size %d must be positive", cfg.BlockSize)
	}
	if cfg.Expiry < 0 {
		return nil, fmt.Errorf("kv: sequences: negative expiry %v", cfg.Expiry)
	}
	if cfg.Expiry == 0 {
		cfg.Expiry = defaultSequenceExpiry
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sequences{
		cfg: cfg, deps: deps, log: log,
		trackers: make(map[Worker]*seqTracker),
		owner:    make(map[string]Worker),
	}, nil
}

// Add registers a routed request: its prefill tokens max(0, ISL −
// Overlap·block size) join the worker's active prefill tokens and its
// hashes the worker's active blocks. A worker not yet known gets a
// tracker. It first force-expires the worker's leaked requests and
// returns their ids. A request id already active is errDuplicateRequest.
func (s *Sequences) Add(r activeRequest) (expired []string, err error) {
	if s.isActive(r.ID) {
		return nil, fmt.Errorf("%w: %q", errDuplicateRequest, r.ID)
	}
	s.publish(sequenceEvent{RequestID: r.ID, Worker: r.Worker, Op: opAddRequest, Add: r.eventData(s.cfg.TrackActiveBlocks), LoraName: r.LoraName})
	return s.add(r)
}

func (s *Sequences) add(r activeRequest) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.owner[r.ID]; dup {
		return nil, fmt.Errorf("%w: %q", errDuplicateRequest, r.ID)
	}
	t := s.tracker(r.Worker)
	expired := t.expire(s.deps.Now(), s.cfg.Expiry)
	for _, id := range expired {
		delete(s.owner, id)
	}
	if len(expired) > 0 {
		s.log.Warn("kv: force-expired leaked requests", "worker_id", r.Worker.ID, "dp_rank", r.Worker.DPRank, "count", len(expired))
	}
	prefill := r.ISL - int(r.Overlap)*s.cfg.BlockSize
	if prefill < 0 {
		s.log.Error("kv: overlap exceeds the prompt", "request_id", r.ID, "isl", r.ISL, "overlap_blocks", r.Overlap)
		prefill = 0
	}
	var hashes []uint64
	if s.cfg.TrackActiveBlocks {
		hashes = slices.Clone(r.Hashes)
	}
	t.add(r.ID, hashes, prefill, max(0, r.ExpectedOutputTokens))
	s.owner[r.ID] = r.Worker
	s.changed(r.Worker, t)
	return expired, nil
}

// MarkPrefillCompleted removes the request's prompt tokens from its
// worker's active prefill tokens (at the first output token). Idempotent;
// unknown ids are ignored.
func (s *Sequences) MarkPrefillCompleted(requestID string) {
	if w, ok := s.workerOf(requestID); ok {
		s.publish(sequenceEvent{RequestID: requestID, Worker: w, Op: opMarkPrefillCompleted})
	}
	s.markPrefillCompleted(requestID)
}

func (s *Sequences) markPrefillCompleted(requestID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.owner[requestID]
	if !ok {
		return
	}
	t := s.trackers[w]
	t.markPrefillCompleted(requestID)
	s.changed(w, t)
}

// Free removes a finished or cancelled request and the blocks only it
// referenced. Unknown ids are ignored, so a double free is harmless.
func (s *Sequences) Free(requestID string) {
	if w, ok := s.workerOf(requestID); ok {
		s.publish(sequenceEvent{RequestID: requestID, Worker: w, Op: opFree})
	}
	s.free(requestID)
}

func (s *Sequences) free(requestID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.owner[requestID]
	if !ok {
		return
	}
	t := s.trackers[w]
	t.free(requestID)
	delete(s.owner, requestID)
	s.changed(w, t)
}

// AddOutputBlock records that the request's output filled one more block
// (--router-track-output-blocks), after generatedTokens output tokens.
// The block gets a random hash. If the request has an expected output
// length, every block referenced by it alone is weighted by
// max(0, 1 − generated/expected). Local only: replicas do not sync
// output blocks. No-op when tracking is off or the id is unknown.
func (s *Sequences) AddOutputBlock(requestID string, generatedTokens int) {
	if !s.cfg.TrackActiveBlocks {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.owner[requestID]
	if !ok {
		return
	}
	t := s.trackers[w]
	decay := -1.0
	if exp := t.reqs[requestID].expectedOutput; exp > 0 {
		decay = max(0, 1-float64(generatedTokens)/float64(exp))
	}
	t.addOutputBlock(requestID, rand.Uint64(), decay)
	s.changed(w, t)
}

// Loads returns, for every tracked (worker, dp rank), its active load and
// how many of hashes (a request's tracking hashes) it does not reference.
func (s *Sequences) Loads(hashes []uint64) map[Worker]workerLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Worker]workerLoad, len(s.trackers))
	for w, t := range s.trackers {
		l := workerLoad{ActivePrefillTokens: t.prefillTokens, ActiveBlocks: t.activeBlocks()}
		if s.cfg.TrackActiveBlocks {
			l.NewBlocks = t.newBlocks(hashes)
		}
		out[w] = l
	}
	return out
}

// ActiveLoads returns the load of every tracked (worker, dp rank), sorted.
func (s *Sequences) ActiveLoads() []activeLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]activeLoad, 0, len(s.trackers))
	for _, w := range slices.SortedFunc(maps.Keys(s.trackers), compareWorkers) {
		out = append(out, seqActiveLoad(w, s.trackers[w]))
	}
	return out
}

// Active returns the number of active requests.
func (s *Sequences) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owner)
}

// UpdateWorkers sets the tracked (worker, dp rank) set: new ones get an
// empty tracker, and the trackers of the others are dropped with their
// requests.
func (s *Sequences) UpdateWorkers(workers []Worker) {
	keep := make(map[Worker]bool, len(workers))
	for _, w := range workers {
		keep[w] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for w, t := range s.trackers {
		if !keep[w] {
			for id := range t.reqs {
				delete(s.owner, id)
			}
			delete(s.trackers, w)
		}
	}
	for w := range keep {
		s.tracker(w)
	}
}

// trackingHashes returns the hashes sequences tracks for a prompt whose
// full blocks have the given sequence hashes (kvblock.SeqHashes): the
// sequence hashes themselves when assumeKVReuse (the default), so shared
// prefixes of concurrent requests count once, or one random hash per
// block when not (--no-router-assume-kv-reuse).
func trackingHashes(seqHashes []uint64, assumeKVReuse bool) []uint64 {
	if assumeKVReuse {
		return slices.Clone(seqHashes)
	}
	out := make([]uint64, len(seqHashes))
	for i := range out {
		out[i] = rand.Uint64()
	}
	return out
}

func (s *Sequences) tracker(w Worker) *seqTracker {
	t := s.trackers[w]
	if t == nil {
		t = newSeqTracker(s.deps.Now(), s.cfg.Expiry)
		s.trackers[w] = t
	}
	return t
}

func (s *Sequences) isActive(id string) bool {
	_, ok := s.workerOf(id)
	return ok
}

func (s *Sequences) workerOf(id string) (Worker, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.owner[id]
	return w, ok
}

func (s *Sequences) publish(ev sequenceEvent) {
	if s.deps.Publish != nil {
		ev.RouterID = s.cfg.RouterID
		s.deps.Publish(ev)
	}
}

// changed reports a tracker's load to OnLoad; called with s.mu held.
func (s *Sequences) changed(w Worker, t *seqTracker) {
	if s.deps.OnLoad != nil {
		s.deps.OnLoad(seqActiveLoad(w, t))
	}
}

func seqActiveLoad(w Worker, t *seqTracker) activeLoad {
	return activeLoad{
		WorkerID:            w.ID,
		DPRank:              w.DPRank,
		ActiveDecodeBlocks:  new(uint64(max(0, t.activeBlocks()))),
		ActivePrefillTokens: new(uint64(max(0, t.prefillTokens))),
	}
}
