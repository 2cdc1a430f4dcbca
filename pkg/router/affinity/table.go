package affinity

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Bus is the event plane the bindings of a model's frontends are shared
// on (*runtime.DistributedRuntime implements it).
type Bus interface {
	Publish(ctx context.Context, subject string, data []byte) error
	Subscribe(ctx context.Context, subject string, handle func(data []byte)) error
	InstanceID() uint64
}

// Config is a Table's configuration.
type Config struct {
	// TTL is how long a binding lasts after the session's latest turn,
	// unless the session asks for its own (nvext.session_control
	// timeout). It must be positive.
	TTL time.Duration
	// Bus shares the bindings with the model's other frontends on
	// Subject; nil keeps them local.
	Bus     Bus
	Subject string
	Metrics *Metrics // nil: not counted
	Model   string   // the metrics' model label
	Logger  *slog.Logger
	Clock   func() time.Time // nil: time.Now
}

// Table is the session bindings of one model. It is safe for concurrent
// use; Run owns its goroutine.
type Table struct {
	cfg    Config
	origin uint64 // this frontend's id on the bus (0 without one)

	mu       sync.Mutex
	sessions map[string]binding
}

type binding struct {
	worker  uint64
	expires time.Time
}

// update is a binding as the bus carries it: Worker 0 unbinds.
type update struct {
	Origin  uint64 `json:"origin"`
	Session string `json:"session"`
	Worker  uint64 `json:"worker,omitempty"`
	TTLMs   int64  `json:"ttl_ms,omitempty"`
}

// NewTable returns an empty table.
func NewTable(cfg Config) *Table {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	t := &Table{cfg: cfg, sessions: map[string]binding{}}
	if cfg.Bus != nil {
		t.origin = cfg.Bus.InstanceID()
	}
	return t
}

// TTL is the bindings' default time to live.
func (t *Table) TTL() time.Duration { return t.cfg.TTL }

// Run applies the other frontends' bindings (when there is a bus) and
// sweeps expired bindings until ctx ends.
func (t *Table) Run(ctx context.Context) error {
	if t.cfg.Bus != nil {
		err := t.cfg.Bus.Subscribe(ctx, t.cfg.Subject, t.apply)
		switch {
		case errors.Is(err, runtime.ErrNoEventPlane):
			t.cfg.Logger.Info("session affinity: bindings stay on this frontend (no event plane; --request-plane nats shares them)", "model", t.cfg.Model)
		case err != nil:
			t.cfg.Logger.Warn("session affinity: bindings are not shared with other frontends", "model", t.cfg.Model, "err", err)
		}
	}
	every := min(max(t.cfg.TTL/2, time.Second), 30*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			t.sweep()
		}
	}
}

// Lookup returns the worker session is bound to.
func (t *Table) Lookup(session string) (uint64, bool) {
	now := t.cfg.Clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.sessions[session]
	if !ok || now.After(b.expires) {
		return 0, false
	}
	return b.worker, true
}

// Bind binds session to worker for ttl (0: the table's), and tells the
// other frontends.
func (t *Table) Bind(session string, worker uint64, ttl time.Duration) {
	if ttl <= 0 {
		ttl = t.cfg.TTL
	}
	t.set(session, worker, ttl)
	t.publish(update{Origin: t.origin, Session: session, Worker: worker, TTLMs: ttl.Milliseconds()})
}

// Unbind ends session's binding, here and on the other frontends.
func (t *Table) Unbind(session string) {
	t.mu.Lock()
	delete(t.sessions, session)
	n := len(t.sessions)
	t.mu.Unlock()
	t.cfg.Metrics.sessions(t.cfg.Model, n)
	t.publish(update{Origin: t.origin, Session: session})
}

// Len returns the bindings held, expired ones not swept yet included.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

func (t *Table) set(session string, worker uint64, ttl time.Duration) {
	t.mu.Lock()
	t.sessions[session] = binding{worker: worker, expires: t.cfg.Clock().Add(ttl)}
	n := len(t.sessions)
	t.mu.Unlock()
	t.cfg.Metrics.sessions(t.cfg.Model, n)
}

func (t *Table) publish(u update) {
	if t.cfg.Bus == nil {
		return
	}
	b, _ := json.Marshal(u)
	// Fire and forget: a frontend that misses it rebinds on its own.
	if err := t.cfg.Bus.Publish(context.Background(), t.cfg.Subject, b); err != nil && !errors.Is(err, runtime.ErrNoEventPlane) {
		t.cfg.Logger.Debug("session affinity: binding not shared", "model", t.cfg.Model, "err", err)
	}
}

// apply takes another frontend's binding.
func (t *Table) apply(data []byte) {
	var u update
	if err := json.Unmarshal(data, &u); err != nil || u.Session == "" || u.Origin == t.origin {
		return
	}
	if u.Worker == 0 {
		t.mu.Lock()
		delete(t.sessions, u.Session)
		n := len(t.sessions)
		t.mu.Unlock()
		t.cfg.Metrics.sessions(t.cfg.Model, n)
		return
	}
	ttl := time.Duration(u.TTLMs) * time.Millisecond
	if ttl <= 0 {
		ttl = t.cfg.TTL
	}
	t.set(u.Session, u.Worker, ttl)
}

func (t *Table) sweep() {
	now := t.cfg.Clock()
	t.mu.Lock()
	for s, b := range t.sessions {
		if now.After(b.expires) {
			delete(t.sessions, s)
		}
	}
	n := len(t.sessions)
	t.mu.Unlock()
	t.cfg.Metrics.sessions(t.cfg.Model, n)
}
