package responsestore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

func newNATS(t *testing.T, cfg NATSConfig) (*NATS, *testenv.NATS) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := testenv.StartNATSWith(t, testenv.NATSOptions{JetStream: true})
	nc, err := nats.Connect(srv.URL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if cfg.TTL == 0 {
		cfg.TTL = time.Hour
	}
	s, err := NewNATS(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

func TestNATS(t *testing.T) {
	s, _ := newNATS(t, NATSConfig{})
	testStore(t, s)
}

// The bucket's TTL expires records.
func TestNATSExpiry(t *testing.T) {
	s, _ := newNATS(t, NATSConfig{TTL: time.Second})
	ctx := t.Context()
	if err := s.Put(ctx, record("resp_1", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "resp_1"); err != nil {
		t.Fatalf("Get at once: %v", err)
	}
	testenv.WaitFor(t, 10*time.Second, "the record to expire", func() bool {
		_, err := s.Get(ctx, "resp_1")
		return errors.Is(err, ErrNotFound)
	})
}

// Two frontends' stores on one server share the records.
func TestNATSShared(t *testing.T) {
	a, srv := newNATS(t, NATSConfig{})
	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := NewNATS(nc, NATSConfig{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put(t.Context(), record("resp_1", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), "resp_1"); err != nil {
		t.Errorf("Get from the other store: %v", err)
	}
}

// A stopped server makes every operation fail fast with ErrUnavailable;
// once it is back, the store works again.
func TestNATSUnavailable(t *testing.T) {
	s, srv := newNATS(t, NATSConfig{OpTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	if err := s.Put(ctx, record("resp_1", "x")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	start := time.Now()
	if _, err := s.Get(ctx, "resp_1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get with the server stopped: %v, want ErrUnavailable", err)
	}
	if err := s.Put(ctx, record("resp_2", "x")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Put with the server stopped: %v, want ErrUnavailable", err)
	}
	if err := s.Delete(ctx, "resp_1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Delete with the server stopped: %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("three operations took %s with a 300 ms timeout", d)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the store to work again", func() bool {
		_, err := s.Get(ctx, "resp_1")
		return err == nil
	})
}

// A store that has never reached its server is unavailable, not broken:
// the bucket is created on first use.
func TestNATSUnavailableFromTheStart(t *testing.T) {
	s, srv := newNATS(t, NATSConfig{OpTimeout: 300 * time.Millisecond})
	srv.Stop()
	if _, err := s.Get(t.Context(), "resp_1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get: %v, want ErrUnavailable", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the bucket to be created", func() bool {
		return s.Put(t.Context(), record("resp_1", "x")) == nil
	})
}

func TestNATSTooLarge(t *testing.T) {
	s, _ := newNATS(t, NATSConfig{})
	err := s.Put(t.Context(), record("resp_1", strings.Repeat("x", 2<<20)))
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("Put of a 2 MiB record: %v, want ErrTooLarge", err)
	}
}
