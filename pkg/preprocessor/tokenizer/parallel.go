package tokenizer

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// Long texts are encoded by several goroutines. The text is cut into
// pieces at two kinds of places where the serial algorithm itself
// separates its work, so the ids of the pieces, concatenated, are the ids
// of the text:
//
//   - around the raw (normalized:false) added tokens: encodeSerial splits
//     on them first and encodes the text between them segment by segment
//     (only the first segment starts the input, which matters to
//     Metaspace's prepend_scheme "first");
//   - inside a long segment, before a space that follows two ASCII
//     letters and precedes one ("ab c"), when the tokenizer's
//     configuration makes that a pre-token boundary
//     (cutAtSpaces): the normalizer works on either side of it
//     (normalize.SplitsAtSpace), the normalized added tokens cannot match
//     across it (matcher.spaceSafe) and the pre-tokenizer ends a split
//     there (pretok.CutsAtSpace). The model encodes each pre-token on its
//     own, so the pieces' ids are those of the segment. Tokenizers without
//     a pre-tokenizer (SentencePiece-style BPE such as Llama-2, where the
//     whole segment is one word), or whose normalizer or pre-tokenizer is
//     not local there (Prepend, Replace, Strip, ByteLevel without its
//     regex, Metaspace without split, ...), are never cut inside segments.

const (
	// parallelMinBytes: shorter texts are encoded on the calling goroutine.
	parallelMinBytes = 32 << 10
	// unitBytes is the size of a unit of work, about 0.5 ms of encoding.
	unitBytes = 8 << 10
)

// parallelism says how Encode spreads its work.
type parallelism struct {
	procs    int // goroutines, the caller's included; 0 means GOMAXPROCS
	minBytes int // texts shorter than this are encoded serially
	unit     int // bytes per unit of work (and between cuts in a segment)
}

var defaultParallelism = parallelism{minBytes: parallelMinBytes, unit: unitBytes}

func (p parallelism) workers() int {
	if p.procs > 0 {
		return p.procs
	}
	return runtime.GOMAXPROCS(0)
}

// piece is a part of the input: an added token (id >= 0) or text for
// encodeText.
type piece struct {
	text    string
	id      int64
	atStart bool
	cut     int // index of the cut after this added token, or -1
}

// encodeParallel is encodeSerial on par.workers() goroutines: the pieces are
// grouped into units of about par.unit bytes, which the goroutines take in
// turn; the units' ids are concatenated in order, after ids.
func (t *Tokenizer) encodeParallel(ids []uint32, segs []segment, from int, cuts *[]Cut, par parallelism, workers int) ([]uint32, error) {
	var units [][]piece
	var cur []piece
	size := 0
	add := func(p piece) {
		cur = append(cur, p)
		if size += len(p.text); size >= par.unit {
			units, cur, size = append(units, cur), nil, 0
		}
	}
	// The cuts passed, each with its unit and its ids within the unit
	// (filled in by the goroutine that encodes the unit).
	var at []cutAt
	off := from
	for si, seg := range segs {
		off += len(seg.text)
		if seg.id >= 0 {
			p := piece{text: seg.text, id: seg.id, cut: -1}
			if cuts != nil && t.cutsAfter(seg.id) {
				p.cut = len(at)
				at = append(at, cutAt{offset: off, unit: len(units)})
			}
			add(p)
			continue
		}
		s, atStart := seg.text, from == 0 && si == 0
		for t.cutAtSpaces && len(s) > par.unit {
			cut := spaceCut(s, par.unit)
			if cut < 0 {
				break
			}
			add(piece{text: s[:cut], id: -1, atStart: atStart, cut: -1})
			s, atStart = s[cut:], false
		}
		add(piece{text: s, id: -1, atStart: atStart, cut: -1})
	}
	if len(cur) > 0 {
		units = append(units, cur)
	}

	out := make([][]uint32, len(units))
	errs := make([]error, len(units))
	var next atomic.Int64
	work := func() {
		var sc scratch
		for {
			u := int(next.Add(1) - 1)
			if u >= len(units) {
				return
			}
			n := 0
			for _, p := range units[u] {
				n += len(p.text)
			}
			ids := make([]uint32, 0, n/2+4) // rarely outgrown: a copy is made below anyway
			for _, p := range units[u] {
				if p.id >= 0 {
					ids = append(ids, uint32(p.id))
					if p.cut >= 0 {
						at[p.cut].tokens = len(ids)
					}
					continue
				}
				var err error
				if ids, err = t.encodeText(ids, p.text, p.atStart, &sc); err != nil {
					errs[u] = err
					break
				}
			}
			out[u] = ids
		}
	}
	// A panic in a helper goroutine is raised again on the caller's, as
	// the serial encoding would raise it (e.g. for a recovering handler).
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked any
	)
	for range min(workers, len(units)) - 1 {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					panicked = r
					mu.Unlock()
				}
			}()
			work()
		})
	}
	work()
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}

	n := len(ids)
	for u := range units {
		if errs[u] != nil {
			return nil, errs[u] // the error the serial encoding meets first
		}
		n += len(out[u])
	}
	all := make([]uint32, len(ids), n)
	copy(all, ids)
	before := make([]int, len(units)) // ids before each unit
	for u, o := range out {
		before[u] = len(all)
		all = append(all, o...)
	}
	for _, c := range at {
		*cuts = append(*cuts, Cut{Offset: c.offset, Tokens: before[c.unit] + c.tokens})
	}
	return all, nil
}

// cutAt is a cut met by encodeParallel: its offset in the text, the unit
// holding the added token before it, and the unit's ids up to that token.
type cutAt struct {
	offset, unit, tokens int
}

// spaceCut returns the first i >= from such that s[i] is a space after two
// ASCII letters and before one, or -1 when there is none. s[:i] and s[i:]
// are then the two sides of a cut.
func spaceCut(s string, from int) int {
	for i := max(from, 2); i+1 < len(s); {
		k := strings.IndexByte(s[i:len(s)-1], ' ')
		if k < 0 {
			return -1
		}
		i += k
		if isASCIILetter(s[i-2]) && isASCIILetter(s[i-1]) && isASCIILetter(s[i+1]) {
			return i
		}
		i++
	}
	return -1
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
