package kvblock

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zeebo/xxh3"
)

func seqTokens(from, to int) []uint32 {
	out := make([]uint32, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, uint32(i))
	}
	return out
}

// TestVectors checks the golden values of spec §2.4.
func TestVectors(t *testing.T) {
	loraSeed := SaltedSeed("adapter-a", "")
	tests := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"xxh3 test data", xxh3.HashSeed([]byte("test data"), Seed), 13226331709069118873},
		{"bs4 block0 local", LocalBlockHash(seqTokens(0, 4)), 9143094415614847814},
		{"bs4 block1 local", LocalHashes(seqTokens(0, 8), 4)[1], 12124091508212882195},
		{"bs4 block1 seq", SeqHashes(LocalHashes(seqTokens(0, 8), 4))[1], 9510318385840434533},
		{"bs16 block0 local", LocalHashes(seqTokens(0, 32), 16)[0], 15310707395893867146},
		{"bs16 block0 seq", SeqHashes(LocalHashes(seqTokens(0, 32), 16))[0], 15310707395893867146},
		{"bs16 block1 local", LocalHashes(seqTokens(0, 32), 16)[1], 15292316782987903195},
		{"bs16 block1 seq", SeqHashes(LocalHashes(seqTokens(0, 32), 16))[1], 13769157705258532664},
		{"bs64 block0 local", LocalHashes(seqTokens(0, 128), 64)[0], 3480597578098033343},
		{"bs64 block1 local", LocalHashes(seqTokens(0, 128), 64)[1], 3318286205056455972},
		{"bs64 block1 seq", SeqHashes(LocalHashes(seqTokens(0, 128), 64))[1], 2575318956255022795},
		{"lora seed", loraSeed, 8842669519798868182},
		{"lora block", LocalBlockHashSeed(seqTokens(0, 4), loraSeed), 6665157333201000639},
		{"empty salts", SaltedSeed("", ""), Seed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %d, want %d", tc.got, tc.want)
			}
		})
	}
}

func TestLocalHashesFullBlocksOnly(t *testing.T) {
	tests := []struct {
		tokens, bs, want int
	}{
		{0, 4, 0}, {3, 4, 0}, {4, 4, 1}, {9, 4, 2}, {2*64 + 1, 64, 2}, {5, 0, 0},
	}
	for _, tc := range tests {
		if got := len(LocalHashes(seqTokens(0, tc.tokens), tc.bs)); got != tc.want {
			t.Errorf("%d tokens, bs %d: %d hashes, want %d", tc.tokens, tc.bs, got, tc.want)
		}
	}
}

func TestLargeBlockMatchesSmallPath(t *testing.T) {
	toks := seqTokens(0, 2*maxStackBlock)
	var b []byte
	for _, tk := range toks {
		b = append(b, byte(tk), byte(tk>>8), byte(tk>>16), byte(tk>>24))
	}
	if got, want := LocalBlockHash(toks), xxh3.HashSeed(b, Seed); got != want {
		t.Errorf("got %d, want %d", got, want)
	}
	if diff := cmp.Diff([]uint64{}, SeqHashes(nil)); diff != "" {
		t.Error(diff)
	}
}

func BenchmarkLocalBlockHash64(b *testing.B) {
	toks := seqTokens(0, 64)
	for b.Loop() {
		LocalBlockHash(toks)
	}
}
