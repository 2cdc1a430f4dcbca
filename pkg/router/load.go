package router

import (
	"errors"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// RefusalHold is how long an instance that refused a request because it
// was full (ResourceExhausted), or did not accept one in time
// (runtime.ErrAckTimeout), counts as Refusing.
const RefusalHold = time.Second

// Load is what a PushRouter has in flight to one instance: the load this
// frontend puts on it, known in every router mode.
type Load struct {
	// Requests are the requests sent to the instance whose calls have not
	// returned.
	Requests int
	// PrefillTokens are the prompt tokens of those requests that have not
	// produced their first output yet: the prefill work queued on the
	// instance by this frontend.
	PrefillTokens int
	// Refusing is set for RefusalHold after the instance refused a
	// request as full or did not accept it in time: it is busy, whatever
	// this frontend's count says (other frontends load it too).
	Refusing bool
}

// loads counts the requests in flight per instance. The zero value is
// ready.
type loads struct {
	mu       sync.Mutex
	byID     map[uint64]*instanceLoad
	routed   int    // requests in flight, all instances
	onChange func() // set before the router serves; called without mu
}

type instanceLoad struct {
	requests, prefill int
	refusedAt         time.Time
}

// start counts a request of isl prompt tokens to id. The returned flight
// must be ended once, after prefilled (optional).
func (l *loads) start(id uint64, isl int) *flight {
	l.mu.Lock()
	if l.byID == nil {
		l.byID = map[uint64]*instanceLoad{}
	}
	il := l.byID[id]
	if il == nil {
		il = &instanceLoad{}
		l.byID[id] = il
	}
	il.requests++
	il.prefill += isl
	l.routed++
	l.mu.Unlock()
	return &flight{l: l, id: id, isl: isl}
}

// flight is one request's count on its instance.
type flight struct {
	l   *loads
	id  uint64
	isl int // prompt tokens still counted; 0 once prefilled
}

// prefilled ends the request's prefill count (its first output came
// back). It is idempotent.
func (f *flight) prefilled() {
	if f.isl == 0 {
		return
	}
	f.l.mu.Lock()
	f.l.byID[f.id].prefill -= f.isl
	f.l.mu.Unlock()
	f.isl = 0
	f.l.changed()
}

// end ends the request's count; err is how its call ended: an instance
// that refused it as full, or did not accept it in time, is marked
// Refusing.
func (f *flight) end(err error) {
	l := f.l
	l.mu.Lock()
	il := l.byID[f.id]
	il.requests--
	il.prefill -= f.isl
	l.routed--
	if refused(err) {
		il.refusedAt = time.Now()
	}
	if il.requests == 0 && il.refusedAt.IsZero() {
		delete(l.byID, f.id)
	}
	l.mu.Unlock()
	l.changed()
}

func (l *loads) changed() {
	if l.onChange != nil {
		l.onChange()
	}
}

// of returns the loads of ids, in the same order, and the requests in
// flight to any instance.
func (l *loads) of(ids []uint64) ([]Load, int) {
	now := time.Now()
	out := make([]Load, len(ids))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range ids {
		il := l.byID[id]
		if il == nil {
			continue
		}
		out[i] = Load{Requests: il.requests, PrefillTokens: il.prefill}
		if !il.refusedAt.IsZero() {
			if now.Sub(il.refusedAt) < RefusalHold {
				out[i].Refusing = true
			} else if il.refusedAt = (time.Time{}); il.requests == 0 {
				delete(l.byID, id)
			}
		}
	}
	return out, l.routed
}

// refused reports an instance's refusal as busy: full (ResourceExhausted)
// or slow to accept (runtime.ErrAckTimeout, a WorkerOverloaded error).
func refused(err error) bool {
	return err != nil && (errors.Is(err, runtime.ErrResourceExhausted) || errors.Is(err, runtime.ErrWorkerOverloaded))
}
