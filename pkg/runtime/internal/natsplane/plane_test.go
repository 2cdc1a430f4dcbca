package natsplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

const subject = "dynamo_backend.generate-7b"

func TestRoundTrip(t *testing.T) {
	_, s, c := setup(t)
	type req struct {
		Headers map[string]string
		Payload string
	}
	got := make(chan req, 2)
	if err := s.Register(subject, func(h map[string]string, p []byte) error {
		got <- req{h, string(p)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := req{map[string]string{"traceparent": "00-abc-def-01", "x-frontend-send-ts-ns": "1730000000000000000"}, "envelope"}
	if err := c.Send(t.Context(), subject, want.Headers, []byte(want.Payload)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, <-got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if err := c.Send(t.Context(), subject, nil, nil); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Headers != nil || r.Payload != "" {
		t.Fatalf("got %+v, want nothing", r)
	}
	if err := s.Register(subject, func(map[string]string, []byte) error { return nil }); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("second Register: %v", err)
	}
}

func TestNoResponders(t *testing.T) {
	_, _, c := setup(t)
	start := time.Now()
	err := c.Send(t.Context(), "nobody.here-1", nil, nil)
	if !errors.Is(err, plane.ErrNoResponders) {
		t.Fatalf("err = %v, want plane.ErrNoResponders", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("no responders took %v", d)
	}
}

func TestHandlerError(t *testing.T) {
	_, s, c := setup(t)
	if err := s.Register(subject, func(map[string]string, []byte) error {
		return errors.New("queue full")
	}); err != nil {
		t.Fatal(err)
	}
	err := c.Send(t.Context(), subject, nil, []byte("x"))
	var ae *plane.AckError
	if !errors.As(err, &ae) || ae.Text != "queue full" {
		t.Fatalf("err = %v, want AckError \"queue full\"", err)
	}
}

func TestUnregister(t *testing.T) {
	_, s, c := setup(t)
	if err := s.Register(subject, func(map[string]string, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(t.Context(), subject, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Unregister(subject); err != nil {
		t.Fatal(err)
	}
	// Unregister flushed, so the NATS server already dropped the interest.
	if err := c.Send(t.Context(), subject, nil, nil); !errors.Is(err, plane.ErrNoResponders) {
		t.Fatalf("after Unregister: err = %v, want no responders", err)
	}
	if err := s.Unregister(subject); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("second Unregister: %v", err)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	_, s, c := setup(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	if err := s.Register(subject, func(map[string]string, []byte) error {
		<-release // a misbehaving handler that blocks
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.timeout = 100 * time.Millisecond
	if err := c.Send(t.Context(), subject, nil, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	c.timeout = 5 * time.Second
	if err := c.Send(ctx, subject, nil, nil); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want the context's DeadlineExceeded", err)
	}
}

// TestServerRestart stops and restarts the NATS server and checks that the
// subscription comes back without any action by the worker.
func TestServerRestart(t *testing.T) {
	n, s, c := setup(t)
	if err := s.Register(subject, func(map[string]string, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(t.Context(), subject, nil, nil); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	if err := c.Send(t.Context(), subject, nil, nil); err == nil {
		t.Fatal("send with NATS down succeeded")
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		err := c.Send(ctx, subject, nil, nil)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("send after restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClose(t *testing.T) {
	_, s, c := setup(t)
	for _, subj := range []string{"a.x-1", "b.y-2"} {
		if err := s.Register(subj, func(map[string]string, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Register("c.z-3", func(map[string]string, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Register after Close: %v", err)
	}
	for _, subj := range []string{"a.x-1", "b.y-2"} {
		if err := c.Send(t.Context(), subj, nil, nil); !errors.Is(err, plane.ErrNoResponders) {
			t.Fatalf("%s after Close: err = %v, want no responders", subj, err)
		}
	}
}
