package tokenizer

import (
	"sort"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/decoder"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/model"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/normalize"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/pretok"
)

// Tokenizer encodes text to token ids and decodes ids to text. It is safe
// for concurrent use.
type Tokenizer struct {
	model      model.Model
	normalizer normalize.Normalizer
	pretok     pretok.PreTokenizer
	post       postProcessor
	decoder    decoder.Decoder

	addedByID      map[uint32]*AddedToken // added_tokens_map_r
	addedByContent map[string]uint32      // added_tokens_map
	special        map[string]bool        // contents of special tokens
	specialIDs     []uint32               // sorted
	rawMatch       *matcher               // normalized:false tokens, on raw text
	normMatch      *matcher               // normalized:true tokens, on normalized text
	vocabSize      int

	// cutAtSpaces: plain text may be cut before a space between ASCII
	// letters and the parts encoded independently (see spaceCut).
	cutAtSpaces bool
}

// Encode returns the ids of text. Added and special tokens in text are
// recognised whatever addSpecialTokens says; addSpecialTokens only runs the
// post-processor (e.g. adds BOS). Long texts are encoded by several
// goroutines, with the same result (see encodeParallel).
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) ([]uint32, error) {
	return t.encode(text, addSpecialTokens, defaultParallelism)
}

func (t *Tokenizer) encode(text string, addSpecialTokens bool, par parallelism) ([]uint32, error) {
	ids, err := t.encodeRaw(nil, text, 0, nil, par)
	if err != nil {
		return nil, err
	}
	if addSpecialTokens && t.post != nil {
		ids = t.post.process(ids)
	}
	return ids, nil
}

// encodeRaw appends to ids the ids of text[from:] without the
// post-processor: from is 0, or a cut of text (cuts.go), after which
// the encoding goes on as it would have in the whole text. With cuts
// not nil it appends the cuts it passes (their Tokens count ids from the
// start of ids). Long texts are encoded by several goroutines.
func (t *Tokenizer) encodeRaw(ids []uint32, text string, from int, cuts *[]Cut, par parallelism) ([]uint32, error) {
	segs := t.rawMatch.splitFrom(nil, text, from, t.idOf)
	if len(text)-from >= par.minBytes {
		if workers := par.workers(); workers > 1 {
			return t.encodeParallel(ids, segs, from, cuts, par, workers)
		}
	}
	return t.encodeSerial(ids, segs, from, cuts)
}

// encodeSerial appends the ids of segs, the raw-match split of a text
// from byte from on (encodeRaw), on the calling goroutine.
func (t *Tokenizer) encodeSerial(ids []uint32, segs []segment, from int, cuts *[]Cut) ([]uint32, error) {
	if ids == nil {
		n := 0
		for _, seg := range segs {
			n += len(seg.text)
		}
		ids = make([]uint32, 0, n/3+4)
	}
	var sc scratch
	off := from
	for si, seg := range segs {
		off += len(seg.text)
		if seg.id >= 0 {
			ids = append(ids, uint32(seg.id))
			if cuts != nil && t.cutsAfter(seg.id) {
				*cuts = append(*cuts, Cut{Offset: off, Tokens: len(ids)})
			}
			continue
		}
		var err error
		if ids, err = t.encodeText(ids, seg.text, from == 0 && si == 0, &sc); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// scratch holds buffers encodeText reuses from call to call.
type scratch struct {
	sub   []segment
	words []string
}

// encodeText appends the ids of text, a piece of the input that holds no
// raw (normalized:false) added token: normalizer, normalized added tokens,
// pre-tokenizer, then the model word by word. atStart tells whether text
// begins the input.
func (t *Tokenizer) encodeText(ids []uint32, text string, atStart bool, sc *scratch) ([]uint32, error) {
	n := text
	if t.normalizer != nil {
		n = t.normalizer.Normalize(n)
	}
	sc.sub = t.normMatch.split(sc.sub[:0], n, t.idOf)
	for ui, s := range sc.sub {
		if s.id >= 0 {
			ids = append(ids, uint32(s.id))
			continue
		}
		if s.text == "" {
			continue
		}
		words := sc.words[:0]
		if t.pretok != nil {
			// Metaspace's prepend_scheme "first" prepends only to the
			// piece that starts the whole input.
			one := [1]string{s.text}
			if sa, ok := t.pretok.(pretok.StartAware); ok {
				words = sa.PreTokenizeAt(words, one[:], atStart && ui == 0)
			} else {
				words = t.pretok.PreTokenize(words, one[:])
			}
		} else {
			words = append(words, s.text)
		}
		sc.words = words
		for _, w := range words {
			if w == "" {
				continue
			}
			var err error
			if ids, err = t.model.Tokenize(ids, w); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}

// Decode returns the text of ids. With skipSpecialTokens, added tokens
// marked special are left out (other added tokens stay). Unknown ids are
// ignored, as in the Rust library. The transformers-level
// clean_up_tokenization_spaces is not applied.
func (t *Tokenizer) Decode(ids []uint32, skipSpecialTokens bool) (string, error) {
	if _, ok := t.decoder.(decoder.ByteLevel); ok {
		return t.decodeByteLevel(ids, skipSpecialTokens), nil
	}
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		tok, ok := t.IDToToken(id)
		if !ok {
			continue
		}
		if skipSpecialTokens && t.special[tok] {
			continue
		}
		tokens = append(tokens, tok)
	}
	return decoder.Decode(t.decoder, tokens), nil
}

// decodeByteLevel is Decode for a tokenizer whose decoder is ByteLevel
// alone (GPT-2 style: Llama 3, Qwen, ...), the same bytes without the
// token list between: a streamed token decodes its few-token window with
// one allocation, the text.
func (t *Tokenizer) decodeByteLevel(ids []uint32, skipSpecialTokens bool) string {
	var buf [256]byte
	out := buf[:0]
	for _, id := range ids {
		tok, ok := t.IDToToken(id)
		if !ok || skipSpecialTokens && t.special[tok] {
			continue
		}
		out = decoder.AppendByteLevel(out, tok)
	}
	return decoder.Lossy(out)
}

// VocabSize returns the number of distinct tokens, model vocabulary and
// added tokens together (get_vocab_size(true) of the Rust library).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenToID returns the id of token, looking at added tokens first.
func (t *Tokenizer) TokenToID(token string) (uint32, bool) {
	if id, ok := t.addedByContent[token]; ok {
		return id, true
	}
	return t.model.TokenToID(token)
}

// IDToToken returns the token of id, looking at added tokens first.
func (t *Tokenizer) IDToToken(id uint32) (string, bool) {
	if a, ok := t.addedByID[id]; ok {
		return a.Content, true
	}
	return t.model.IDToToken(id)
}

// SpecialTokens returns the ids of the added tokens marked special, sorted.
func (t *Tokenizer) SpecialTokens() []uint32 { return append([]uint32(nil), t.specialIDs...) }

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id uint32) bool {
	a, ok := t.addedByID[id]
	return ok && t.special[a.Content]
}

// AddedTokens returns the added tokens with their effective ids, sorted by id.
func (t *Tokenizer) AddedTokens() []AddedToken {
	out := make([]AddedToken, 0, len(t.addedByID))
	for id, a := range t.addedByID {
		c := *a
		c.ID = id
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (t *Tokenizer) idOf(a *AddedToken) uint32 { return t.addedByContent[a.Content] }

// addTokens registers added tokens the way AddedVocabulary::add_tokens does:
// a token already in the model vocabulary keeps the model id, a new one gets
// the next free id after the model vocabulary (the ids written in the file
// are not trusted, like in the Rust library).
func (t *Tokenizer) addTokens(tokens []AddedToken) error {
	t.addedByID = map[uint32]*AddedToken{}
	t.addedByContent = map[string]uint32{}
	t.special = map[string]bool{}
	modelSize := uint32(t.model.VocabSize())
	var maxID uint32
	hasMax := false
	for i := range tokens {
		a := &tokens[i]
		if a.Special && a.Content != "" {
			t.special[a.Content] = true
		}
	}
	for i := range tokens {
		a := tokens[i]
		if a.Content == "" {
			continue
		}
		if old, ok := t.addedByContent[a.Content]; ok {
			cmp := a
			cmp.ID = old
			if *t.addedByID[old] == cmp {
				continue // identical token already present
			}
		}
		var id uint32
		if old, ok := t.addedByContent[a.Content]; ok {
			id = old
		} else if mid, ok := t.model.TokenToID(a.Content); ok {
			id = mid
		} else if !hasMax {
			id = modelSize
		} else if maxID >= modelSize || modelSize == 0 {
			id = maxID + 1
		} else {
			id = modelSize
		}
		if !hasMax || id > maxID {
			maxID, hasMax = id, true
		}
		a.ID = id
		t.addedByContent[a.Content] = id
		t.addedByID[id] = &a
	}
	// Matchers: one entry per id (the current token of that id).
	var rawPat, normPat []string
	var rawTok, normTok []*AddedToken
	ids := make([]uint32, 0, len(t.addedByID))
	for id := range t.addedByID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		a := t.addedByID[id]
		if t.special[a.Content] {
			t.specialIDs = append(t.specialIDs, id)
		}
		if a.Normalized {
			p := a.Content
			if t.normalizer != nil {
				p = t.normalizer.Normalize(p)
			}
			normPat, normTok = append(normPat, p), append(normTok, a)
		} else {
			rawPat, rawTok = append(rawPat, a.Content), append(rawTok, a)
		}
	}
	t.rawMatch = newMatcher(rawPat, rawTok)
	t.normMatch = newMatcher(normPat, normTok)
	t.vocabSize = t.model.VocabSize()
	for content := range t.addedByContent {
		if _, inModel := t.model.TokenToID(content); !inModel {
			t.vocabSize++
		}
	}
	return nil
}
