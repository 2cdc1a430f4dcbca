package frontend

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// refusalLogEvery is how often a kind of refusal (overload, a tenant's
// limit) is logged at most, per model and status: under overload the
// refusals come by the thousand a second, and a line each would drown
// the log when it is most needed. With debug on (where every request
// writes lines anyway) each refusal has its line; all are counted in the
// metrics.
const refusalLogEvery = time.Second

// refusalLog logs refusals of a kind at most once per refusalLogEvery,
// with the count since its last line.
type refusalLog struct {
	clock func() time.Time
	mu    sync.Mutex
	last  map[refusalKey]*refusalCount
}

type refusalKey struct {
	kind, model string
	status      int
}

type refusalCount struct {
	at     time.Time // when the last line was written
	missed int       // refusals since, not logged at info
}

func newRefusalLog(clock func() time.Time) *refusalLog {
	return &refusalLog{clock: clock, last: map[refusalKey]*refusalCount{}}
}

// isRefusal reports whether e is a refusal the client may retry (the
// ones whose lines are limited).
func isRefusal(e apiError) bool {
	return e.kind == ErrOverload || e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable
}

// log writes msg with args at level for the refusal e of model: at most
// one line per kind, model and status a second, carrying the number of
// such refusals it stands for ("refusals"); with debug on, every one.
func (l *refusalLog) log(ctx context.Context, log *slog.Logger, level slog.Level, e apiError, model, msg string, args ...any) {
	if log.Enabled(ctx, slog.LevelDebug) {
		log.Log(ctx, level, msg, args...)
		return
	}
	k := refusalKey{kind: e.kind, model: model, status: e.status}
	now := l.clock()
	l.mu.Lock()
	c := l.last[k]
	if c == nil {
		c = &refusalCount{}
		l.last[k] = c
	}
	if !c.at.IsZero() && now.Sub(c.at) < refusalLogEvery {
		c.missed++
		l.mu.Unlock()
		return
	}
	n := c.missed + 1
	c.at, c.missed = now, 0
	l.mu.Unlock()
	log.Log(ctx, level, msg, append(args, "refusals", n, "per", refusalLogEvery.String())...)
}
