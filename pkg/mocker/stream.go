package mocker

import (
	"slices"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// stream carries one request's tokens from its rank's scheduler to the
// Generate call serving it. The scheduler never blocks on it: tokens are
// appended to a buffer and ready is signalled.
type stream struct {
	mu      sync.Mutex
	pending []uint32
	finish  backend.FinishKind // "" while running
	errMsg  string
	cached  int // prefix-cache hit tokens at first admission

	ready chan struct{} // capacity 1
}

func newStream() *stream { return newStreamOn(make(chan struct{}, 1)) }

// newStreamOn returns a stream signalling ready, a channel of capacity 1
// that the streams of one request's choices share (their Generate call
// waits on it for any of them).
func newStreamOn(ready chan struct{}) *stream { return &stream{ready: ready} }

func (s *stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// push appends a token.
func (s *stream) push(tok uint32) {
	s.mu.Lock()
	s.pending = append(s.pending, tok)
	s.mu.Unlock()
	s.signal()
}

// end records the finish reason; only the first one counts.
func (s *stream) end(kind backend.FinishKind, msg string) {
	s.mu.Lock()
	if s.finish == "" {
		s.finish, s.errMsg = kind, msg
	}
	s.mu.Unlock()
	s.signal()
}

// setCached records the prefix-cache hit of the first admission.
func (s *stream) setCached(n int) {
	s.mu.Lock()
	s.cached = n
	s.mu.Unlock()
}

// take returns the pending tokens and the finish reason ("" if none yet).
func (s *stream) take(buf []uint32) ([]uint32, backend.FinishKind, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf = append(buf[:0], s.pending...)
	s.pending = s.pending[:0]
	return buf, s.finish, s.errMsg
}

func (s *stream) cachedTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cached
}

// stopSet is a request's stop condition on generated tokens.
type stopSet struct {
	ids       []uint32 // EOS ids (unless ignore_eos) and stop token ids
	minTokens int
}

func newStopSet(req *backend.Request) stopSet {
	var s stopSet
	if req.StopConditions.IgnoreEOS == nil || !*req.StopConditions.IgnoreEOS {
		s.ids = append(s.ids, req.EOSTokenIDs...)
	}
	s.ids = append(s.ids, req.StopConditions.StopTokenIDs...)
	s.ids = append(s.ids, req.StopConditions.StopTokenIDsHidden...)
	s.ids = append(s.ids, req.StopConditions.StopTokenIDsVisible...)
	if req.StopConditions.MinTokens != nil {
		s.minTokens = int(*req.StopConditions.MinTokens)
	}
	return s
}

// stops reports whether tok, the generated-th token, ends the sequence.
func (s stopSet) stops(tok uint32, generated int) bool {
	return generated >= s.minTokens && len(s.ids) > 0 && slices.Contains(s.ids, tok)
}
