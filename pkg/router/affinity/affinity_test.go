package affinity

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/router"
)

// fakeRouting stands for the routing below the stage: it serves a pinned
// request on its worker, any other on pick, and says where it went.
type fakeRouting struct {
	available []uint64
	refusing  map[uint64]bool
	pick      uint64
	served    []uint64
	fail      error
}

func (f *fakeRouting) Available() []uint64 { return f.available }

func (f *fakeRouting) Loads(ids []uint64) ([]router.Load, int) {
	out := make([]router.Load, len(ids))
	for i, id := range ids {
		out[i].Refusing = f.refusing[id]
	}
	return out, 0
}

func (f *fakeRouting) Generate(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	id := f.pick
	if rt := req.Routing; rt != nil && rt.BackendInstanceID != nil {
		id = *rt.BackendInstanceID
	}
	f.served = append(f.served, id)
	if f.fail != nil {
		return f.fail
	}
	return emit(&backend.Output{TokenIDs: []uint32{1}, Placement: &backend.Placement{WorkerID: id}})
}

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func turn(s *Stage, sess *backend.Session) error {
	req := &backend.Request{TokenIDs: []uint32{1, 2, 3}, Routing: &backend.Routing{Session: sess}}
	return s.Generate(context.Background(), req, func(*backend.Output) error { return nil })
}

func TestSessionStaysOnItsWorker(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	table := NewTable(Config{TTL: time.Minute, Clock: clk.Now})
	r := &fakeRouting{available: []uint64{1, 2, 3}, pick: 2}
	s := NewStage(r, table, r, nil)
	sess := &backend.Session{ID: "conv-1"}

	if err := turn(s, sess); err != nil {
		t.Fatal(err)
	}
	// The router would now pick elsewhere: the session stays.
	for _, pick := range []uint64{3, 1, 3} {
		r.pick = pick
		if err := turn(s, sess); err != nil {
			t.Fatal(err)
		}
	}
	if want := []uint64{2, 2, 2, 2}; !slices.Equal(r.served, want) {
		t.Fatalf("served on %v, want %v", r.served, want)
	}

	t.Run("a request without a session is routed as usual", func(t *testing.T) {
		r.served, r.pick = nil, 3
		if err := turn(s, nil); err != nil || !slices.Equal(r.served, []uint64{3}) {
			t.Fatalf("served on %v (%v), want the router's pick 3", r.served, err)
		}
	})

	t.Run("a request that names its worker goes there", func(t *testing.T) {
		r.served = nil
		one := uint64(1)
		req := &backend.Request{Routing: &backend.Routing{Session: sess, BackendInstanceID: &one}}
		_ = s.Generate(context.Background(), req, func(*backend.Output) error { return nil })
		if id, _ := table.Lookup("conv-1"); !slices.Equal(r.served, []uint64{1}) || id != 2 {
			t.Fatalf("served on %v, binding %d: want 1, and the binding left at 2", r.served, id)
		}
	})

	t.Run("the binding expires a TTL after the latest turn", func(t *testing.T) {
		clk.add(59 * time.Second)
		if _, ok := table.Lookup("conv-1"); !ok {
			t.Fatal("binding gone before its TTL")
		}
		clk.add(2 * time.Second)
		if _, ok := table.Lookup("conv-1"); ok {
			t.Fatal("binding still there after its TTL")
		}
	})
}

func TestSessionMovesWhenItsWorkerCannotServe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(r *fakeRouting)
		gate   Gate
	}{
		{name: "gone", break_: func(r *fakeRouting) { r.available = []uint64{1, 3} }},
		{name: "refusing", break_: func(r *fakeRouting) { r.refusing = map[uint64]bool{2: true} }},
		{name: "full", break_: func(*fakeRouting) {}, gate: func(c []uint64) []uint64 {
			return slices.DeleteFunc(slices.Clone(c), func(id uint64) bool { return id == 2 })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := NewTable(Config{TTL: time.Minute})
			r := &fakeRouting{available: []uint64{1, 2, 3}, pick: 2}
			gateOn := false
			gate := Gate(nil)
			if tc.gate != nil {
				gate = func(c []uint64) []uint64 {
					if !gateOn {
						return c
					}
					return tc.gate(c)
				}
			}
			s := NewStage(r, table, r, gate)
			sess := &backend.Session{ID: "conv"}
			if err := turn(s, sess); err != nil {
				t.Fatal(err)
			}
			tc.break_(r)
			gateOn = true
			r.pick = 3
			for range 2 {
				if err := turn(s, sess); err != nil {
					t.Fatal(err)
				}
			}
			if want := []uint64{2, 3, 3}; !slices.Equal(r.served, want) {
				t.Fatalf("served on %v, want %v: moved once, then kept on the new worker", r.served, want)
			}
		})
	}
}

func TestSessionCloseForgetsTheBinding(t *testing.T) {
	table := NewTable(Config{TTL: time.Minute})
	r := &fakeRouting{available: []uint64{1, 2}, pick: 1}
	s := NewStage(r, table, r, nil)
	_ = turn(s, &backend.Session{ID: "c"})
	r.pick = 2
	_ = turn(s, &backend.Session{ID: "c", Close: true})
	if _, ok := table.Lookup("c"); ok {
		t.Fatal("the session is still bound after its close")
	}
	_ = turn(s, &backend.Session{ID: "c"})
	if want := []uint64{1, 1, 2}; !slices.Equal(r.served, want) {
		t.Fatalf("served on %v, want %v: the closing turn on the bound worker, then afresh", r.served, want)
	}
}

func TestSessionTTLOfTheRequest(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	table := NewTable(Config{TTL: time.Hour, Clock: clk.Now})
	r := &fakeRouting{available: []uint64{1}, pick: 1}
	_ = turn(NewStage(r, table, r, nil), &backend.Session{ID: "short", TTL: 5 * time.Second})
	clk.add(6 * time.Second)
	if _, ok := table.Lookup("short"); ok {
		t.Fatal("a session that asked for 5 s is bound after 6 s")
	}
}

func TestFailedTurnBindsNothing(t *testing.T) {
	table := NewTable(Config{TTL: time.Minute})
	r := &fakeRouting{available: []uint64{1}, pick: 1, fail: errors.New("no")}
	if err := turn(NewStage(r, table, r, nil), &backend.Session{ID: "x"}); err == nil {
		t.Fatal("the turn's error was lost")
	}
	if _, ok := table.Lookup("x"); ok {
		t.Fatal("a turn that no worker served bound its session")
	}
}

// bus is an in-memory event plane shared by tables.
type bus struct {
	id   uint64
	hub  *hub
	subj string
}

type hub struct {
	mu   sync.Mutex
	subs map[string][]func([]byte)
}

func (b *bus) Publish(_ context.Context, subject string, data []byte) error {
	b.hub.mu.Lock()
	subs := slices.Clone(b.hub.subs[subject])
	b.hub.mu.Unlock()
	for _, h := range subs {
		h(data)
	}
	return nil
}

func (b *bus) Subscribe(_ context.Context, subject string, handle func([]byte)) error {
	b.hub.mu.Lock()
	defer b.hub.mu.Unlock()
	b.hub.subs[subject] = append(b.hub.subs[subject], handle)
	return nil
}

func (b *bus) InstanceID() uint64 { return b.id }

func TestTablesShareBindings(t *testing.T) {
	h := &hub{subs: map[string][]func([]byte){}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tables []*Table
	var wg sync.WaitGroup
	for id := range uint64(2) {
		tb := NewTable(Config{TTL: time.Minute, Bus: &bus{id: id + 1, hub: h}, Subject: "s"})
		tables = append(tables, tb)
		wg.Go(func() { _ = tb.Run(ctx) })
	}
	// Run subscribes first thing; wait for both subscriptions.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		n := len(h.subs["s"])
		h.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tables did not subscribe")
		}
	}
	tables[0].Bind("conv", 7, 0)
	if id, ok := tables[1].Lookup("conv"); !ok || id != 7 {
		t.Fatalf("the other frontend sees %d (%v), want 7", id, ok)
	}
	tables[1].Unbind("conv")
	if _, ok := tables[0].Lookup("conv"); ok {
		t.Fatal("an unbind did not reach the other frontend")
	}
	// A table ignores its own echo, and what it cannot read.
	b, _ := json.Marshal(update{Origin: 1, Session: "echo", Worker: 9})
	tables[0].apply(b)
	tables[0].apply([]byte("{"))
	if _, ok := tables[0].Lookup("echo"); ok {
		t.Fatal("a table applied its own update")
	}
	cancel()
	wg.Wait()
}
