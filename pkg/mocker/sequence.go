package mocker

import (
	"math/rand/v2"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// seqState is where a sequence is in its rank's scheduler.
type seqState uint8

const (
	stWaiting seqState = iota
	stPrefill
	stDecode
	stDone
)

// sequence is one request inside a rank's scheduler (the reference
// system's ActiveSequence). It is guarded by the rank's mutex.
type sequence struct {
	out   *stream
	state seqState

	tokens    []uint32 // prompt + generated
	promptLen int
	maxTokens int // tokens to generate in total
	generated int
	stop      stopSet
	seed      int64 // the choice's seed (ChoiceSeed)
	determ    bool
	vocab     []uint32 // output ids to draw from; nil: [1000, 2000)

	// choice is the sequence's choice index (sampling_options.n > 1);
	// lead is choice 0's sequence for the others, nil for choice 0: a
	// sibling admitted after its lead finds the prompt's full blocks
	// cached (they share them).
	choice int
	lead   *sequence
	// script, when scripted, is the whole output (Config.Script): token
	// i is script[i], and the sequence ends (FinishEOS) after the last.
	script   []uint32
	scripted bool

	// local and seqh are the local and sequence hashes of the full blocks
	// of tokens, kept across preemption (tokens only grow).
	local []uint64
	seqh  []uint64
	// lora is the request's LoRA adapter ("" for the base model), and
	// hashSeed the seed of the local hashes: LoraHashSeed(lora).
	lora     string
	hashSeed uint64

	blocks    []blockID // allocated blocks; nil when not allocated
	newTokens int       // prompt tokens still to prefill
	admitted  bool      // admitted at least once

	// transferred marks a decode engine's sequence whose prompt KV cache
	// came from a prefill worker: it is allocated without prefill time
	// (until a preemption drops it, when it is recomputed like any
	// other); handedCached is the prefill's reported cache hit.
	transferred  bool
	handedCached int
}

// extendHashes hashes the full blocks of tokens not hashed yet.
func (s *sequence) extendHashes(bs int) {
	for n := len(s.local); (n+1)*bs <= len(s.tokens); n++ {
		local := kvblock.LocalBlockHashSeed(s.tokens[n*bs:(n+1)*bs], s.hashSeed)
		h := local
		if n > 0 {
			h = kvblock.SeqHash(s.seqh[n-1], local)
		}
		s.local = append(s.local, local)
		s.seqh = append(s.seqh, h)
	}
}

// scriptDone reports whether a scripted sequence has emitted its whole
// script: it ends like a model that produced EOS.
func (s *sequence) scriptDone() bool { return s.scripted && s.generated >= len(s.script) }

// nextToken is the token generated at the current end of the sequence.
func (s *sequence) nextToken() uint32 {
	if s.scripted {
		return s.script[s.generated]
	}
	if s.determ {
		return DeterministicTokenIn(s.vocab, s.seed, len(s.tokens))
	}
	if len(s.vocab) > 0 {
		return s.vocab[rand.IntN(len(s.vocab))]
	}
	return randomToken()
}
