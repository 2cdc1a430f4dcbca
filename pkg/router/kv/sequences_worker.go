package kv

import (
	"math"
	"time"
)

// seqTracker is the active-sequence state of one (worker, dp rank): the
// reference system's ActiveSequences. Not safe for concurrent use; its
// sequences serialises access.
type seqTracker struct {
	reqs map[string]*seqEntry
	// refs counts, per tracking hash, the active requests referencing it;
	// a block counts once however many requests share it.
	refs map[uint64]int
	// fractional is the weight in [0, 1] of output blocks that decay
	// (absent = 1); only hashes present in refs.
	fractional map[uint64]float64
	// prefillTokens is the sum of the entries' prefill.
	prefillTokens int

	expiryAt  time.Time
	expiryIDs []string // requests present at the previous expiry tick
}

// seqEntry is one active request.
type seqEntry struct {
	hashes         []uint64
	prefill        int // prompt tokens still to prefill; 0 once completed
	expectedOutput int // 0 = unknown
}

func newSeqTracker(now time.Time, expiry time.Duration) *seqTracker {
	return &seqTracker{
		reqs:       make(map[string]*seqEntry),
		refs:       make(map[uint64]int),
		fractional: make(map[uint64]float64),
		expiryAt:   now.Add(expiry),
	}
}

// expire frees every request that was already present at the previous
// tick if the timer has run out, and starts the next period. It returns
// the freed ids.
func (t *seqTracker) expire(now time.Time, expiry time.Duration) []string {
	if now.Before(t.expiryAt) {
		return nil
	}
	var freed []string
	for _, id := range t.expiryIDs {
		if _, ok := t.reqs[id]; ok {
			t.free(id)
			freed = append(freed, id)
		}
	}
	t.expiryIDs = t.expiryIDs[:0]
	for id := range t.reqs {
		t.expiryIDs = append(t.expiryIDs, id)
	}
	t.expiryAt = now.Add(expiry)
	return freed
}

// add stores a request; the caller has checked it is new.
func (t *seqTracker) add(id string, hashes []uint64, prefill, expectedOutput int) {
	for _, h := range hashes {
		t.refs[h]++
	}
	t.prefillTokens += prefill
	t.reqs[id] = &seqEntry{hashes: hashes, prefill: prefill, expectedOutput: expectedOutput}
}

// markPrefillCompleted drops the request's prefill tokens; idempotent.
func (t *seqTracker) markPrefillCompleted(id string) {
	if e := t.reqs[id]; e != nil {
		t.prefillTokens -= e.prefill
		e.prefill = 0
	}
}

// free removes a request and the blocks only it referenced; unknown ids
// are ignored.
func (t *seqTracker) free(id string) {
	e := t.reqs[id]
	if e == nil {
		return
	}
	t.markPrefillCompleted(id)
	for _, h := range e.hashes {
		if t.refs[h]--; t.refs[h] <= 0 {
			delete(t.refs, h)
			delete(t.fractional, h)
		}
	}
	delete(t.reqs, id)
}

// addOutputBlock appends block h to the request and, when decay >= 0,
// gives every block referenced by this request alone the weight decay.
func (t *seqTracker) addOutputBlock(id string, h uint64, decay float64) bool {
	e := t.reqs[id]
	if e == nil {
		return false
	}
	e.hashes = append(e.hashes, h)
	t.refs[h]++
	if decay >= 0 {
		for _, b := range e.hashes {
			if t.refs[b] == 1 {
				t.fractional[b] = decay
			}
		}
	}
	return true
}

// activeBlocks = round(|unique blocks| − Σ(1 − fractional weight)).
func (t *seqTracker) activeBlocks() int {
	discount := 0.0
	for _, f := range t.fractional {
		discount += 1 - f
	}
	return int(math.Round(float64(len(t.refs)) - discount))
}

// newBlocks counts the hashes no active request references.
func (t *seqTracker) newBlocks(hashes []uint64) int {
	n := 0
	for _, h := range hashes {
		if t.refs[h] == 0 {
			n++
		}
	}
	return n
}
