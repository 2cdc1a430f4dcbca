package pipeline

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// Two frontends on one discovery: a registration one of them takes
// reaches the other, which keeps its own copy, so it outlives the first
// frontend's lease; a removal on either removes every copy.
func TestLoraRegistrationsOutliveTheirFrontend(t *testing.T) {
	space := discovery.NewMemSpace()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var regs []*loraRegistrations
	var stores []*discovery.Mem
	for range 2 {
		st := space.NewStore()
		stores = append(stores, st)
		l := newLoraRegistrations(st, slog.New(slog.DiscardHandler))
		regs = append(regs, l)
		go l.run(ctx)
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	copies := func() int {
		kvs, _ := stores[1].List(ctx, LoraRegistrationPrefix)
		return len(kvs)
	}
	reg := LoraRegistration{Name: "sql", BaseModel: "demo", Source: "/a", Replicas: 1}
	if err := regs[0].put(ctx, reg); err != nil {
		t.Fatal(err)
	}
	waitUntil("the second frontend's copy", func() bool { _, ok := regs[1].get("sql"); return ok && copies() == 2 })

	stores[0].Close() // the first frontend's lease ends: its copy goes
	waitUntil("the first copy gone", func() bool { return copies() == 1 })
	if got, ok := regs[1].get("sql"); !ok || got != reg {
		t.Fatalf("the second frontend lost the registration with the first frontend: %+v %v", got, ok)
	}

	if had, err := regs[1].remove(ctx, "sql"); err != nil || !had {
		t.Fatalf("remove: %v %v", had, err)
	}
	if copies() != 0 {
		t.Fatalf("%d copies left after the removal", copies())
	}
	if _, ok := regs[1].get("sql"); ok {
		t.Fatal("the registration is still known after its removal")
	}
}
