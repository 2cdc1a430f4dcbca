package model

import (
	"hash/maphash"
	"strings"
	"sync"
)

const (
	cacheShards      = 16
	cacheCapacity    = 10000 // as the Rust library (DEFAULT_CACHE_CAPACITY)
	cacheMaxWordSize = 256   // words of this many bytes or more are not cached
)

// wordCache is a bounded, sharded word -> ids cache safe for concurrent use.
// Like the Rust cache it simply stops inserting when full.
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]uint32
}

func newWordCache() *wordCache {
	c := &wordCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]uint32)
	}
	return c
}

func (c *wordCache) shard(word string) *cacheShard {
	return &c.shards[maphash.String(c.seed, word)%cacheShards]
}

func (c *wordCache) get(word string) ([]uint32, bool) {
	if c == nil || len(word) >= cacheMaxWordSize {
		return nil, false
	}
	s := c.shard(word)
	s.mu.RLock()
	ids, ok := s.m[word]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []uint32) {
	if c == nil || len(word) >= cacheMaxWordSize {
		return
	}
	s := c.shard(word)
	s.mu.Lock()
	if len(s.m) < cacheCapacity/cacheShards {
		s.m[strings.Clone(word)] = append([]uint32(nil), ids...)
	}
	s.mu.Unlock()
}
