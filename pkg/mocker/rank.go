package mocker

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// requestTotalSlots is the hard-coded request_total_slots of the
// reference mocker's load metrics.
const requestTotalSlots = 1024

// rank is the scheduler state of one data-parallel rank (§6.2). Its
// mutex guards everything below it; the scheduler loop holds it for the
// computing part of a pass (never while sleeping or publishing), and
// Generate holds it to submit and remove sequences.
type rank struct {
	idx  int
	cfg  *Config
	wake chan struct{} // capacity 1: work was submitted
	load atomic.Int64  // requests of this rank being served by Generate

	mu            sync.Mutex
	kv            *blockManager
	waiting       []*sequence // FIFO; index 0 is the head
	prefill       []*sequence // FIFO
	decode        []*sequence // oldest first: the preemption victim
	dirty         bool        // decode holds sequences no longer decoding
	activeTokens  int         // tokens of the current pass
	waitingTokens int         // not yet prefilled tokens of admitted sequences
	nextUnique    uint64
	preemptions   uint64
	hits          hitWindow
	lastLoad      kvblock.ForwardPassMetrics
	last          passStats  // of the latest pass, for tests and logs
	outputs       []delivery // of the current pass, delivered when it ends
}

// delivery is one output of a pass for one stream: a token, or a finish.
type delivery struct {
	out    *stream
	tok    uint32
	finish backend.FinishKind // "" for a token
}

// takeOutputs returns and clears the outputs of the pass. The caller
// holds r.mu.
func (r *rank) takeOutputs() []delivery {
	out := r.outputs
	r.outputs = nil
	return out
}

// deliver hands a pass's outputs to their streams.
func deliver(ds []delivery) {
	for _, d := range ds {
		if d.finish != "" {
			d.out.end(d.finish, "")
		} else {
			d.out.push(d.tok)
		}
	}
}

// passStats describes one scheduler pass.
type passStats struct {
	prefillTokens int // prompt tokens prefilled
	decodeSeqs    int // sequences given a decode step
}

func newRank(idx int, cfg *Config) *rank {
	return &rank{
		idx:  idx,
		cfg:  cfg,
		wake: make(chan struct{}, 1),
		// A decode engine's cache is no router's business: no KV events.
		kv: newBlockManager(cfg.NumGPUBlocks, uint32(idx), cfg.EnablePrefixCaching && cfg.DisaggregationMode != ModeDecode),
	}
}

// submit queues new sequences, in order, and wakes the scheduler.
func (r *rank) submit(seqs ...*sequence) {
	r.mu.Lock()
	for _, s := range seqs {
		s.state = stWaiting
		r.waiting = append(r.waiting, s)
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// remove takes a sequence out of the scheduler wherever it is and frees
// its blocks. It is idempotent.
func (r *rank) remove(s *sequence) {
	r.mu.Lock()
	defer r.mu.Unlock()
	del := func(q []*sequence) []*sequence {
		if i := slices.Index(q, s); i >= 0 {
			return slices.Delete(q, i, i+1)
		}
		return q
	}
	switch s.state {
	case stWaiting:
		r.waiting = del(r.waiting)
	case stPrefill:
		r.prefill = del(r.prefill)
		r.waitingTokens -= s.newTokens
	case stDecode:
		r.decode = del(r.decode)
	}
	r.release(s)
	s.state = stDone
}

// hasWork reports whether any sequence is queued or running.
func (r *rank) hasWork() bool {
	return len(r.waiting)+len(r.prefill)+len(r.decode) > 0
}

func (r *rank) unique() blockID {
	r.nextUnique++
	return blockID{hash: r.nextUnique, partial: true}
}

// cachedPrefix is the number of prompt tokens covered by the longest
// prefix of s's full blocks present in the cache.
func (r *rank) cachedPrefix(s *sequence) int {
	if !r.cfg.EnablePrefixCaching {
		return 0
	}
	n := 0
	for n < len(s.seqh) && r.kv.cached(s.seqh[n]) {
		n++
	}
	return n * r.cfg.BlockSize
}

// allocate acquires all blocks of s (its creation Use signal).
func (r *rank) allocate(s *sequence) bool {
	bs := r.cfg.BlockSize
	full := len(s.tokens) / bs
	blocks := make([]blockID, 0, full+1)
	for i := range full {
		if r.cfg.EnablePrefixCaching {
			blocks = append(blocks, blockID{hash: s.seqh[i]})
		} else {
			blocks = append(blocks, r.unique())
		}
	}
	if len(s.tokens)%bs != 0 {
		blocks = append(blocks, r.unique())
	}
	if !r.kv.useFor(blocks, s.local, s.tokens, s.lora) {
		return false
	}
	s.blocks = blocks
	return true
}

// release frees the blocks of s.
func (r *rank) release(s *sequence) {
	r.kv.deref(s.blocks)
	s.blocks = nil
}

// preemptOldest releases the oldest decoding sequence and puts it back at
// the head of waiting, to be recomputed (with its generated tokens as
// part of its prompt, so no token is generated twice). It reports false
// when nothing is decoding.
func (r *rank) preemptOldest() bool {
	for _, s := range r.decode {
		if s.state != stDecode {
			continue
		}
		r.release(s)
		s.state = stWaiting
		s.transferred = false // its transferred cache is gone: recompute
		r.waiting = slices.Insert(r.waiting, 0, s)
		r.preemptions++
		r.dirty = true
		r.cfg.Logger.Debug("mocker: preempted", "rank", r.idx, "tokens", len(s.tokens))
		return true
	}
	return false
}

// finish ends s with kind and frees its blocks.
func (r *rank) finish(s *sequence, kind backend.FinishKind) {
	r.release(s)
	s.state = stDone
	r.dirty = true
	r.outputs = append(r.outputs, delivery{out: s.out, finish: kind})
}

// compact drops sequences that stopped decoding from the decode queue.
func (r *rank) compact() {
	if r.dirty {
		r.decode = slices.DeleteFunc(r.decode, func(s *sequence) bool { return s.state != stDecode })
		r.dirty = false
	}
}

// appendToken generates one token for s (§6.4): a token that starts a new
// block first acquires a partial block (which may fail: then nothing
// happens and appendToken returns false), a token that fills a block
// promotes it to a full block.
//
// A scripted sequence whose script is used up ends (FinishEOS) instead,
// like a model that produced EOS: an empty script yields no token.
func (r *rank) appendToken(s *sequence) bool {
	if s.scriptDone() {
		r.finish(s, backend.FinishEOS)
		return true
	}
	bs := r.cfg.BlockSize
	if len(s.tokens)%bs == 0 {
		id := r.unique()
		if !r.kv.use([]blockID{id}, nil, nil) {
			return false
		}
		s.blocks = append(s.blocks, id)
	}
	tok := s.nextToken()
	s.tokens = append(s.tokens, tok)
	s.generated++
	if len(s.tokens)%bs == 0 && r.cfg.EnablePrefixCaching {
		s.extendHashes(bs)
		n := len(s.seqh)
		var parent *uint64
		if n > 1 {
			p := s.seqh[n-2]
			parent = &p
		}
		last := len(s.blocks) - 1
		r.kv.promoteFor(s.blocks[last], s.seqh[n-1], parent, s.local[n-1], s.tokens[(n-1)*bs:n*bs], s.lora)
		s.blocks[last] = blockID{hash: s.seqh[n-1]}
	}
	r.outputs = append(r.outputs, delivery{out: s.out, tok: tok})
	switch {
	case s.generated >= s.maxTokens:
		r.finish(s, backend.FinishLength)
	case s.scripted:
		// A script is the output exactly: no stop ids; its end is EOS
		// (without an extra token), which scriptDone finds next pass
		// unless the script ended here.
		if s.scriptDone() {
			r.finish(s, backend.FinishEOS)
		}
	case s.stop.stops(tok, s.generated):
		r.finish(s, backend.FinishEOS)
	}
	return true
}
