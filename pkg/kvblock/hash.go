package kvblock

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// Seed is the XXH3 seed of block hashes and of the sequence-hash chain
// (the reference system's XXH3_SEED = CHAIN_XXH3_SEED).
const Seed uint64 = 1337

// maxStackBlock is the largest block (in tokens) hashed without allocating.
const maxStackBlock = 256

// LocalBlockHash returns the local hash (the events' tokens_hash) of one
// block: XXH3-64 with Seed over the tokens as little-endian u32 bytes.
func LocalBlockHash(tokens []uint32) uint64 {
	return LocalBlockHashSeed(tokens, Seed)
}

// LocalBlockHashSeed is LocalBlockHash with an explicit seed (see
// SaltedSeed).
func LocalBlockHashSeed(tokens []uint32, seed uint64) uint64 {
	var stack [4 * maxStackBlock]byte
	var b []byte
	if len(tokens) <= maxStackBlock {
		b = stack[:4*len(tokens)]
	} else {
		b = make([]byte, 4*len(tokens))
	}
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(b[4*i:], t)
	}
	return xxh3.HashSeed(b, seed)
}

// LocalHashes returns the local hash of every full block of tokens;
// a trailing partial block is ignored. blockSize must be positive.
func LocalHashes(tokens []uint32, blockSize int) []uint64 {
	return LocalHashesSeed(tokens, blockSize, Seed)
}

// LocalHashesSeed is LocalHashes with an explicit seed.
func LocalHashesSeed(tokens []uint32, blockSize int, seed uint64) []uint64 {
	if blockSize <= 0 {
		return nil
	}
	n := len(tokens) / blockSize
	out := make([]uint64, n)
	for i := range n {
		out[i] = LocalBlockHashSeed(tokens[i*blockSize:(i+1)*blockSize], seed)
	}
	return out
}

// SeqHash chains a block's local hash onto its parent's sequence hash:
// XXH3-64 with Seed over le_u64(parent) || le_u64(local). The first block
// of a sequence has no parent; its sequence hash is its local hash.
func SeqHash(parent, local uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], parent)
	binary.LittleEndian.PutUint64(b[8:], local)
	return xxh3.HashSeed(b[:], Seed)
}

// SeqHashes returns the chained sequence hashes of a list of local
// hashes: seq[0] = local[0], seq[i] = SeqHash(seq[i-1], local[i]).
func SeqHashes(local []uint64) []uint64 {
	out := make([]uint64, len(local))
	for i, h := range local {
		if i == 0 {
			out[i] = h
		} else {
			out[i] = SeqHash(out[i-1], h)
		}
	}
	return out
}

// SaltedSeed returns the block-hash seed of the E2 salting scheme: Seed,
// plus xxh3(loraName, 0) when loraName is non-empty, plus
// xxh3(cacheNamespace, 1) when cacheNamespace is non-empty (wrapping
// additions). With both empty it is Seed. The chain seed is never salted.
func SaltedSeed(loraName, cacheNamespace string) uint64 {
	seed := Seed
	if loraName != "" {
		seed += xxh3.HashStringSeed(loraName, 0)
	}
	if cacheNamespace != "" {
		seed += xxh3.HashStringSeed(cacheNamespace, 1)
	}
	return seed
}
