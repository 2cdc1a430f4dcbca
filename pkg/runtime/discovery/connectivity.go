package discovery

import (
	"log/slog"
	"sync"
	"time"
)

// Connectivity is a store's link to the service behind it, as the store
// last saw it. The file and mem stores are always connected.
type Connectivity struct {
	// Connected is false while the store cannot reach its service (etcd
	// unreachable, its keep-alives failing or stalled).
	Connected bool
	// Since is when the current state began.
	Since time.Time
	// Outages counts the times the store lost its service.
	Outages uint64
}

// link tracks a store's connectivity and logs each outage once when it
// starts and once when it ends.
type link struct {
	log  *slog.Logger
	what string

	mu       sync.Mutex
	state    Connectivity
	returned time.Time // when the last outage ended; zero if none did
}

func newLink(log *slog.Logger, what string) *link {
	return &link{log: log, what: what, state: Connectivity{Connected: true, Since: time.Now()}}
}

// get returns the current connectivity.
func (l *link) get() Connectivity {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// down records that the service is unreachable; the first call of an
// outage logs it.
func (l *link) down(reason error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.state.Connected {
		return
	}
	l.state = Connectivity{Connected: false, Since: time.Now(), Outages: l.state.Outages + 1}
	l.log.Warn("discovery: "+l.what+" unreachable; serving with what is known until it returns", "err", reason)
}

// up records that the service answers again and this process's keys are
// in place; the first call after an outage logs its end.
func (l *link) up() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Connected {
		return
	}
	now := time.Now()
	l.log.Info("discovery: "+l.what+" reachable again", "outage", now.Sub(l.state.Since).Round(time.Millisecond))
	l.state = Connectivity{Connected: true, Since: now, Outages: l.state.Outages}
	l.returned = now
}

// settling reports whether deletions seen now should be held back: the
// service is unreachable, or came back less than grace ago (its view may
// still lack keys that their owners are about to write again).
func (l *link) settling(grace time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.state.Connected || !l.returned.IsZero() && time.Since(l.returned) < grace
}
