package runtime

import (
	"context"
	"errors"
	"testing"
)

func TestContextStopThenKillIsMonotonic(t *testing.T) {
	c := NewContext(t.Context(), "req-1")
	if c.ID() != "req-1" || c.IsStopped() || c.IsKilled() {
		t.Fatalf("new context: id=%q stopped=%v killed=%v", c.ID(), c.IsStopped(), c.IsKilled())
	}
	c.StopGenerating()
	if !c.IsStopped() || c.IsKilled() {
		t.Fatal("after stop: want stopped, not killed")
	}
	select {
	case <-c.Done():
		t.Fatal("stop must not end the context.Context")
	default:
	}
	c.Kill()
	c.Stop() // must not move back
	if !c.IsKilled() || !c.IsStopped() {
		t.Fatal("after kill then stop: want killed")
	}
	<-c.Done()
	<-c.Killed()
	if !errors.Is(context.Cause(c), ErrKilled) || !errors.Is(context.Cause(c), ErrCancelled) {
		t.Fatalf("cause = %v, want ErrKilled (a Cancelled error)", context.Cause(c))
	}
}

func TestContextKillWithoutStopClosesBothChannels(t *testing.T) {
	c := NewContext(context.Background(), "")
	if c.ID() == "" {
		t.Fatal("empty id: want a generated UUID")
	}
	c.Kill()
	<-c.Stopped()
	<-c.Killed()
}

func TestContextParentCancelKills(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.Background())
	c := NewContext(parent, "x")
	gone := errors.New("client gone")
	cancel(gone)
	<-c.Killed()
	if !errors.Is(context.Cause(c), gone) {
		t.Fatalf("cause = %v, want the parent's cause", context.Cause(c))
	}
}

func TestContextLinkChildOrderAndLateLink(t *testing.T) {
	parent := NewContext(context.Background(), "p")
	var order []string
	a, b := NewContext(context.Background(), "a"), NewContext(context.Background(), "b")
	parent.LinkChild(a)
	parent.LinkChild(b)
	done := make(chan struct{})
	go func() {
		<-a.Stopped()
		order = append(order, "a")
		<-b.Stopped()
		order = append(order, "b")
		close(done)
	}()
	parent.Stop()
	<-done
	if !a.IsStopped() || !b.IsStopped() || a.IsKilled() {
		t.Fatal("stop did not reach the children as a stop")
	}
	parent.Kill()
	if !a.IsKilled() || !b.IsKilled() {
		t.Fatal("kill did not reach the children")
	}
	late := NewContext(context.Background(), "late")
	parent.LinkChild(late)
	if !late.IsKilled() {
		t.Fatal("a child linked to a killed parent must be killed at once")
	}
	if len(order) != 2 {
		t.Fatalf("order = %v", order)
	}
}

func TestFromContext(t *testing.T) {
	c := NewContext(context.Background(), "id")
	got, ok := FromContext(context.WithValue(c, struct{}{}, 1))
	if !ok || got != c {
		t.Fatal("FromContext did not find the request context through a derived context")
	}
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("FromContext found a request context in Background")
	}
}
