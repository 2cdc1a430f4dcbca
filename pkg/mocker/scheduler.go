package mocker

import (
	"slices"
	"time"
)

// step runs one scheduler pass (§6.2 steps 2–6) and returns its simulated
// GPU time (before the speedup ratio). The caller holds r.mu.
func (r *rank) step() time.Duration {
	r.admit()
	total, prefilled := r.prefillPass()
	r.compact()
	r.last = passStats{prefillTokens: prefilled, decodeSeqs: len(r.decode)}
	if len(r.decode) > 0 {
		bs := r.cfg.BlockSize
		total += decodeTime(r.kv.activeBlocks()*bs, r.cfg.NumGPUBlocks*bs)
	}
	r.activeTokens = len(r.decode)
	r.decodePass()
	return total
}

// admit moves waiting sequences, in FIFO order, to the prefill queue while
// the watermark, token and sequence budgets allow. When nothing is
// running the head is admitted regardless, so a sequence bigger than the
// budgets (but validated to fit the cache) cannot wait forever.
func (r *rank) admit() {
	bs := r.cfg.BlockSize
	blocks := r.kv.activeBlocks()
	tokens := r.activeTokens + r.waitingTokens
	seqs := len(r.prefill) + len(r.decode)
	limit := (1 - r.cfg.Watermark) * float64(r.cfg.NumGPUBlocks)
	for len(r.waiting) > 0 {
		s := r.waiting[0]
		cached := r.cachedPrefix(s)
		if s.lead != nil && s.lead.admitted && r.cfg.EnablePrefixCaching {
			// The lead, admitted before it, holds (or is about to
			// compute) the prompt's full blocks, which the choices share.
			cached = max(cached, s.promptLen/bs*bs)
		}
		newTokens := len(s.tokens) - cached
		if s.transferred {
			cached, newTokens = s.handedCached, 0
		}
		blocks += (len(s.tokens) + bs - 1) / bs
		tokens += newTokens
		seqs++
		check := tokens
		if r.cfg.EnableChunkedPrefill {
			check -= newTokens
		}
		fits := float64(blocks) <= limit && check <= r.cfg.MaxNumBatchedTokens && seqs <= r.cfg.MaxNumSeqs
		if !fits && len(r.prefill)+len(r.decode) > 0 {
			return
		}
		r.waiting[0] = nil
		r.waiting = r.waiting[1:]
		s.state = stPrefill
		s.newTokens = newTokens
		r.waitingTokens += newTokens
		if !s.transferred {
			r.hits.add(1 - float64(newTokens)/float64(len(s.tokens)))
		}
		if !s.admitted {
			s.admitted = true
			s.out.setCached(cached)
		}
		r.prefill = append(r.prefill, s)
	}
}

// prefillPass prefills the prefill queue in order within the pass's token
// budget, chunking the sequence that does not fit; it returns the
// simulated time and the number of tokens prefilled. A sequence's blocks are all acquired on its first pass;
// if there is no room, decoding sequences are preempted, oldest first,
// and failing that the sequence goes back to waiting.
func (r *rank) prefillPass() (time.Duration, int) {
	var total time.Duration
	prefilled := 0
	for len(r.prefill) > 0 {
		s := r.prefill[0]
		if s.blocks == nil && !r.allocateOrPreempt(s) {
			r.prefill[0] = nil
			r.prefill = r.prefill[1:]
			r.waitingTokens -= s.newTokens
			s.state = stWaiting
			r.waiting = slices.Insert(r.waiting, 0, s)
			continue
		}
		remaining := r.cfg.MaxNumBatchedTokens - r.activeTokens
		if s.newTokens > remaining {
			if remaining > 0 {
				total += prefillTime(remaining)
				prefilled += remaining
				s.newTokens -= remaining
				r.waitingTokens -= remaining
				r.activeTokens = r.cfg.MaxNumBatchedTokens
			}
			break
		}
		total += prefillTime(s.newTokens)
		prefilled += s.newTokens
		r.activeTokens += s.newTokens
		r.waitingTokens -= s.newTokens
		s.newTokens = 0
		r.prefill[0] = nil
		r.prefill = r.prefill[1:]
		s.state = stDecode
		r.decode = append(r.decode, s)
	}
	return total, prefilled
}

func (r *rank) allocateOrPreempt(s *sequence) bool {
	for {
		if r.allocate(s) {
			return true
		}
		if !r.preemptOldest() {
			return false
		}
	}
}

// decodePass generates one token for every decoding sequence. When a
// sequence needs a block and none is free, the oldest decoding sequence is
// preempted and the sequence gets no token in this pass.
func (r *rank) decodePass() {
	for _, s := range r.decode {
		if s.state != stDecode {
			continue
		}
		if !r.appendToken(s) {
			r.preemptOldest()
		}
	}
	r.compact()
}

// hitWindow is the running mean of the last hitWindowSize admission hit
// rates.
type hitWindow struct {
	vals [hitWindowSize]float64
	n    int // values recorded, capped at hitWindowSize
	next int
	sum  float64
}

const hitWindowSize = 1000

func (h *hitWindow) add(v float64) {
	if h.n == hitWindowSize {
		h.sum -= h.vals[h.next]
	} else {
		h.n++
	}
	h.vals[h.next] = v
	h.sum += v
	h.next = (h.next + 1) % hitWindowSize
}

func (h *hitWindow) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}
