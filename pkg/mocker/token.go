package mocker

import "math/rand/v2"

// First output token id and the number of distinct output ids: tokens are
// in [tokenBase, tokenBase+tokenRange).
const (
	tokenBase  = 1000
	tokenRange = 1000
)

// DeterministicToken is the token a Deterministic engine generates at
// absolute sequence position (prompt length + tokens generated before it)
// for a request with sampling seed seed (0 when the request has none):
// 1000 + splitmix64(seed ^ position) % 1000.
func DeterministicToken(seed int64, position int) uint32 {
	return tokenBase + uint32(splitmix64(uint64(seed)^uint64(position))%tokenRange)
}

// DeterministicTokenIn is DeterministicToken over the output vocabulary
// vocab: vocab[splitmix64(seed ^ position) % len(vocab)]. An empty vocab
// means DeterministicToken's [1000, 2000).
func DeterministicTokenIn(vocab []uint32, seed int64, position int) uint32 {
	if len(vocab) == 0 {
		return DeterministicToken(seed, position)
	}
	return vocab[splitmix64(uint64(seed)^uint64(position))%uint64(len(vocab))]
}

// randomToken is a uniformly random output token.
func randomToken() uint32 { return tokenBase + rand.Uint32N(tokenRange) }

// splitmix64 is the SplitMix64 finaliser, a good 64-bit mixing function.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// ChoiceSeed is the seed choice choice (0..n-1) of a request with
// sampling_options.n = n draws its tokens with, for a request with seed
// seed: seed itself for choice 0 (so choice 0 is the answer the request
// gets with n = 1), a mix of seed and the index for the others. A
// Deterministic engine's token of choice i at a position is
// DeterministicTokenIn(vocab, ChoiceSeed(seed, i), position).
func ChoiceSeed(seed int64, choice int) int64 {
	if choice == 0 {
		return seed
	}
	return seed ^ int64(splitmix64(choiceSalt+uint64(choice)))
}

// choiceSalt separates the choice seeds from the positions they are
// mixed with.
const choiceSalt = 0x63686f6963650000 // "choice\x00\x00"
