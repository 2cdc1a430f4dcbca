package preprocessor

import (
	"container/list"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// A conversation's next turn re-sends the whole conversation: its chat
// prompt, rendered, begins with what the previous turn rendered (up to the
// previous generation prompt). conversationCache keeps the token ids of
// the prompts rendered recently, with the places where their encoding may
// be cut (tokenizer.Cut: after a special token such as the end of a
// message), so that a prompt that begins with one of them, as far as one
// of its cuts, is encoded from there on only (tokenizer.Resume). What is
// compared is the rendered text, byte for byte: a template that renders
// earlier turns differently once later ones exist (dropping the reasoning
// of past assistant turns, say) shares only what it rendered the same.
// The ids are those of a whole encoding, always.
//
// Prompts are found by a hash of their text up to each cut, which names
// the latest prompt that has it (prompts that share a beginning, a system
// prompt say, share its hashes: one entry each, whatever their number);
// a hit is checked against the cached text before it is used. The cache holds at
// most its byte budget (text, ids and cuts), dropping the least recently
// used prompt first; a prompt that the next turn extended from its last
// cut is dropped at once (the new one holds all it held).
type conversationCache struct {
	budget int64
	seed   maphash.Seed
	// minBytes: shorter prompts are encoded whole and not kept
	// (conversationMinBytes; tests lower it).
	minBytes int
	// reused counts the ids taken from the cache.
	reused atomic.Int64

	mu    sync.Mutex
	size  int64
	lru   list.List            // *cachedPrompt, most recently used first
	byCut map[uint64]cutHolder // hash of a prompt's text up to a cut: the latest prompt with it
}

// cachedPrompt is one encoded prompt. Its text, ids, cuts and sums never
// change once it is in the cache, so a reader may use them without the
// lock; elem is the cache's, under its lock.
type cachedPrompt struct {
	text string
	ids  []uint32 // without the post-processor
	cuts []tokenizer.Cut
	sums []uint64 // hash of text[:cuts[i].Offset]
	// json is ids written as the inside of a JSON array, and jsonAt[i]
	// its length up to cuts[i]: a prompt resumed at a cut copies that
	// much and writes only its own ids (backend.PromptJSON).
	json   []byte
	jsonAt []int
	elem   *list.Element
	size   int64
}

// cutHolder is the i-th cut of p.
type cutHolder struct {
	p *cachedPrompt
	i int
}

// conversationMinBytes is the shortest rendered prompt the cache keeps
// (about a thousand tokens): a shorter one encodes in well under a
// millisecond, and keeping every short single-turn prompt would spend the
// budget's memory for nothing.
const conversationMinBytes = 4 << 10

func newConversationCache(budget int64) *conversationCache {
	return &conversationCache{budget: budget, seed: maphash.MakeSeed(), minBytes: conversationMinBytes, byCut: map[uint64]cutHolder{}}
}

// encode returns the ids of text (tokenizer.Encode without special
// tokens), their JSON encoding, and how many of them came from the cache.
func (c *conversationCache) encode(tok *tokenizer.Tokenizer, text string) (ids []uint32, enc *backend.PromptJSON, reused int, err error) {
	if len(text) < c.minBytes {
		ids, err = tok.Encode(text, false)
		return ids, nil, 0, err
	}
	offsets := tok.CutOffsets(nil, text)
	sums := c.sums(text, offsets)
	from, at := c.lookup(text, offsets, sums)
	var cuts []tokenizer.Cut
	if from != nil {
		var after []tokenizer.Cut
		var ok bool
		ids, after, ok, err = tok.Resume(text, from.cuts[at], from.ids)
		if err != nil {
			return nil, nil, 0, err
		}
		if ok {
			reused = from.cuts[at].Tokens
			c.reused.Add(int64(reused))
			cuts = append(slices.Clip(from.cuts[:at+1]), after...)
		} else {
			from = nil
		}
	}
	if from == nil {
		if ids, cuts, err = tok.EncodeCuts(text); err != nil {
			return nil, nil, 0, err
		}
	}
	p := c.insert(text, ids, cuts, offsets, sums, from, at)
	if p == nil || len(ids) == 0 {
		return ids, nil, reused, nil
	}
	// The request gets the cache's ids, clipped so that a stage that
	// appends to them (a migration) copies them first; nothing writes
	// into a request's ids.
	out := slices.Clip(p.ids)
	return out, backend.NewPromptJSON(out, p.json), reused, nil
}

// encodeJSON writes p's ids as JSON, from its prompt's at-th cut's when
// it was resumed there (from's encoding up to it is copied), and the
// length up to each cut.
func encodeJSON(p, from *cachedPrompt, at int) {
	p.jsonAt = make([]int, len(p.cuts))
	done := 0 // ids written
	if from != nil {
		p.json = append(make([]byte, 0, from.jsonAt[at]+(len(p.ids)-p.cuts[at].Tokens)*11), from.json[:from.jsonAt[at]]...)
		copy(p.jsonAt, from.jsonAt[:at+1])
		done = p.cuts[at].Tokens
		at++
	} else {
		p.json = make([]byte, 0, len(p.ids)*11)
		at = 0
	}
	for i := at; i < len(p.cuts); i++ {
		p.json = backend.AppendTokenIDList(p.json, p.ids[done:p.cuts[i].Tokens], done > 0)
		done = p.cuts[i].Tokens
		p.jsonAt[i] = len(p.json)
	}
	p.json = backend.AppendTokenIDList(p.json, p.ids[done:], done > 0)
}

// sums hashes text up to each offset.
func (c *conversationCache) sums(text string, offsets []int) []uint64 {
	out := make([]uint64, len(offsets))
	var h maphash.Hash
	h.SetSeed(c.seed)
	prev := 0
	for i, off := range offsets {
		_, _ = h.WriteString(text[prev:off])
		out[i] = h.Sum64()
		prev = off
	}
	return out
}

// lookup returns the cached prompt that text begins with as far as the
// latest of text's cuts it can, and the index of that cut in it.
func (c *conversationCache) lookup(text string, offsets []int, sums []uint64) (*cachedPrompt, int) {
	for k := len(offsets) - 1; k >= 0; k-- {
		off := offsets[k]
		c.mu.Lock()
		h, ok := c.byCut[sums[k]]
		c.mu.Unlock()
		if ok && h.p.cuts[h.i].Offset == off && h.p.text[:off] == text[:off] {
			return h.p, h.i
		}
	}
	return nil, 0
}

// insert adds the encoding of text, made from the prompt from (nil: none)
// resumed at its cut at, drops what exceeds the budget, and returns the
// prompt added (nil if it was not: too large for the budget).
func (c *conversationCache) insert(text string, ids []uint32, cuts []tokenizer.Cut, offsets []int, sums []uint64, from *cachedPrompt, at int) *cachedPrompt {
	p := &cachedPrompt{text: text, ids: ids, cuts: cuts}
	// The cuts' offsets are those CutOffsets found, whose sums are known.
	p.sums = make([]uint64, len(cuts))
	k := 0
	for i, cut := range cuts {
		for k < len(offsets) && offsets[k] < cut.Offset {
			k++
		}
		if k == len(offsets) || offsets[k] != cut.Offset {
			return nil // not expected: keep the cache as it was
		}
		p.sums[i] = sums[k]
	}
	encodeJSON(p, from, at)
	p.size = int64(len(text)) + 4*int64(len(p.ids)) + int64(len(p.json)) + 32*int64(len(cuts)) + 128
	if p.size > c.budget {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if from != nil && from.elem != nil {
		if at == len(from.cuts)-1 {
			c.removeLocked(from)
		} else {
			c.lru.MoveToFront(from.elem)
		}
	}
	p.elem = c.lru.PushFront(p)
	for i, s := range p.sums {
		c.byCut[s] = cutHolder{p: p, i: i}
	}
	c.size += p.size
	for c.size > c.budget {
		c.removeLocked(c.lru.Back().Value.(*cachedPrompt))
	}
	return p
}

// removeLocked drops p; c.mu is held.
func (c *conversationCache) removeLocked(p *cachedPrompt) {
	if p.elem == nil {
		return
	}
	c.lru.Remove(p.elem)
	p.elem = nil
	c.size -= p.size
	for _, s := range p.sums {
		if c.byCut[s].p == p {
			delete(c.byCut, s)
		}
	}
}

// stats returns the prompts held and their bytes.
func (c *conversationCache) stats() (prompts int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.size
}
