package tokenizer

// A conversation's next turn re-sends the whole conversation, whose
// rendered prompt begins with the text the previous turn rendered. Its
// encoding can start from the ids of that beginning and encode only the
// rest, where the encoding of the whole text passes a cut: right after a
// raw (normalized:false) added token, where encodeRaw starts a new
// segment. The text before a cut is split, normalized, pre-tokenized and
// encoded without looking past it, and the text after it starts a segment
// of its own, so the ids of any text that begins with the same bytes up
// to the cut are the ids up to the cut followed by those of the rest,
// provided that the text after the cut does not change what is matched
// before it:
//
//   - no added token that begins before the cut may match the new text
//     across it (leftmost-longest matching would take it instead): Resume
//     checks that in the new text (cutHolds);
//   - the token before the cut is neither rstrip (it would swallow white
//     space after the cut) nor single_word (it matches only when a
//     non-word character follows): such tokens make no cuts (cutsAfter).
//
// lstrip tokens after the cut look back only to the end of the previous
// match, and single_word ones at the character before them, which is the
// same in both texts (splitFrom).

// A Cut is a place where an encoding may be resumed: the text's first
// Offset bytes encode, without the post-processor, to its first Tokens
// ids, whatever follows them (see Resume for the one condition).
type Cut struct {
	// Offset is the byte offset of the cut in the text.
	Offset int
	// Tokens is the number of ids before it.
	Tokens int
}

// EncodeCuts returns the ids of text without the post-processor (Encode
// with addSpecialTokens false) and the places where they may be cut, in
// order.
func (t *Tokenizer) EncodeCuts(text string) ([]uint32, []Cut, error) {
	return t.encodeCuts(text, defaultParallelism)
}

func (t *Tokenizer) encodeCuts(text string, par parallelism) ([]uint32, []Cut, error) {
	var cuts []Cut
	ids, err := t.encodeRaw(nil, text, 0, &cuts, par)
	if err != nil {
		return nil, nil, err
	}
	return ids, cuts, nil
}

// Resume returns the ids of text without the post-processor, given the
// ids of its beginning: text[:at.Offset] are the same bytes as an earlier
// text's, at is a cut EncodeCuts or Resume returned for that earlier
// text, and prefix holds at least its first at.Tokens ids. Only the rest
// of text is encoded. It also returns the cuts of text after at. ok is
// false, with nothing encoded, when at is not a cut of text: an added
// token that begins before it matches text across it; text must then be
// encoded whole.
func (t *Tokenizer) Resume(text string, at Cut, prefix []uint32) (ids []uint32, cuts []Cut, ok bool, err error) {
	return t.resume(text, at, prefix, defaultParallelism)
}

func (t *Tokenizer) resume(text string, at Cut, prefix []uint32, par parallelism) (ids []uint32, cuts []Cut, ok bool, err error) {
	if at.Offset < 0 || at.Offset > len(text) || at.Tokens < 0 || at.Tokens > len(prefix) || !t.cutHolds(text, at.Offset) {
		return nil, nil, false, nil
	}
	rest := len(text) - at.Offset
	ids = make([]uint32, at.Tokens, at.Tokens+rest/3+4)
	copy(ids, prefix[:at.Tokens])
	if ids, err = t.encodeRaw(ids, text, at.Offset, &cuts, par); err != nil {
		return nil, nil, false, err
	}
	return ids, cuts, true, nil
}

// CutOffsets appends to dst the offsets of text's cuts, the Offset of each
// Cut that EncodeCuts would return, without encoding: what a cache of
// earlier encodings needs to look text up.
func (t *Tokenizer) CutOffsets(dst []int, text string) []int {
	m := t.rawMatch
	if m == nil || len(m.toks) == 0 {
		return dst
	}
	off := 0
	for _, seg := range m.split(nil, text, t.idOf) {
		off += len(seg.text)
		if seg.id >= 0 && t.cutsAfter(seg.id) {
			dst = append(dst, off)
		}
	}
	return dst
}

// PostProcess returns raw ids (of EncodeCuts or Resume) with what the
// post-processor adds (the BOS of many tokenizers): Encode's ids with
// addSpecialTokens set.
func (t *Tokenizer) PostProcess(raw []uint32) []uint32 {
	if t.post == nil {
		return raw
	}
	return t.post.process(raw)
}

// cutsAfter reports whether the added token id ends a cut (package
// comment above).
func (t *Tokenizer) cutsAfter(id int64) bool {
	a := t.addedByID[uint32(id)]
	return a != nil && !a.RStrip && !a.SingleWord
}

// cutHolds reports whether no raw added token that begins before off
// matches text across it.
func (t *Tokenizer) cutHolds(text string, off int) bool {
	m := t.rawMatch
	if m == nil || len(m.toks) == 0 || off == 0 {
		return true
	}
	for i := max(0, off-m.longest+1); i < off; i++ {
		if !m.first[text[i]] {
			continue
		}
		node := int32(0)
		for j := i; j < len(text); j++ {
			c, ok := m.edges[uint64(node)<<8|uint64(text[j])]
			if !ok {
				break
			}
			node = c
			if j >= off && m.term[node] >= 0 {
				return false
			}
		}
	}
	return true
}
