package runtime_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

func TestPublishSubscribe(t *testing.T) {
	nats := testenv.StartNATS(t)
	mem := discovery.NewMemSpace()
	newRT := func() *runtime.DistributedRuntime {
		rt, err := runtime.New(t.Context(), runtime.Config{Discovery: runtime.DiscoveryMem, RequestPlane: runtime.PlaneNATS, NATSServer: nats.URL, TCPHost: "127.0.0.1"}, runtime.Deps{MemSpace: mem})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Close() })
		return rt
	}
	pub, sub := newRT(), newRT()
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan string, 10)
	if err := sub.Subscribe(ctx, "namespace.ns.component.c.kv-events", func(b []byte) { got <- string(b) }); err != nil {
		t.Fatal(err)
	}
	waitInterest(t, nats.URL, "namespace.ns.component.c.kv-events", true)
	for _, m := range []string{"a", "b"} {
		if err := pub.Publish(ctx, "namespace.ns.component.c.kv-events", []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"a", "b"} {
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("got %q, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no message %q", want)
		}
	}
	cancel()
	waitInterest(t, nats.URL, "namespace.ns.component.c.kv-events", false)
	_ = pub.Publish(t.Context(), "namespace.ns.component.c.kv-events", []byte("late"))
	select {
	case m := <-got:
		t.Fatalf("message %q after the subscription ended", m)
	case <-time.After(200 * time.Millisecond):
	}
	noPlane, err := runtime.New(t.Context(), runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1"}, runtime.Deps{MemSpace: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer noPlane.Close()
	if err := noPlane.Subscribe(t.Context(), "x", func([]byte) {}); !errors.Is(err, runtime.ErrNoEventPlane) {
		t.Fatalf("without NATS: %v", err)
	}
}

// On the wire every payload travels in the reference system's envelope:
// MessagePack with named fields, numbered per publisher and subject. A
// message that is not an envelope is skipped, and the next one still
// arrives.
func TestPublishWrapsPayloadsInEnvelopes(t *testing.T) {
	srv := testenv.StartNATS(t)
	mem := discovery.NewMemSpace()
	rt, err := runtime.New(t.Context(), runtime.Config{Discovery: runtime.DiscoveryMem, RequestPlane: runtime.PlaneNATS, NATSServer: srv.URL, TCPHost: "127.0.0.1"}, runtime.Deps{MemSpace: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	raw, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	wire := make(chan *nats.Msg, 10)
	if _, err := raw.ChanSubscribe("namespace.ns.>", wire); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	if err := rt.Subscribe(t.Context(), "namespace.ns.component.c.kv-events", func(b []byte) { got <- string(b) }); err != nil {
		t.Fatal(err)
	}
	// raw's subscription has reached the server once Flush returns; rt's
	// reaches it before rt's first publication, on the same connection.
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}

	before := uint64(time.Now().UnixMilli())
	for _, m := range []struct{ subject, payload string }{
		{"namespace.ns.component.c.kv-events", "a"},
		{"namespace.ns.kv_metrics", "m"},
		{"namespace.ns.component.c.kv-events", "b"},
	} {
		if err := rt.Publish(t.Context(), m.subject, []byte(m.payload)); err != nil {
			t.Fatal(err)
		}
	}
	wantEnv := []struct {
		topic, payload string
		seq            uint64
	}{{"kv-events", "a", 0}, {"kv_metrics", "m", 0}, {"kv-events", "b", 1}}
	for _, want := range wantEnv {
		select {
		case m := <-wire:
			e, err := runtime.DecodeEnvelope(m.Data)
			if err != nil {
				t.Fatal(err)
			}
			if e.PublisherID != rt.InstanceID() || e.Topic != want.topic || string(e.Payload) != want.payload || e.Sequence != want.seq ||
				e.PublishedAt < before || e.PublishedAtNs/1e6 != e.PublishedAt {
				t.Errorf("envelope %+v, want publisher %x topic %s payload %s sequence %d, times consistent and after %d",
					e, rt.InstanceID(), want.topic, want.payload, want.seq, before)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no message on the wire")
		}
	}
	if err := raw.Publish("namespace.ns.component.c.kv-events", []byte("not an envelope")); err != nil {
		t.Fatal(err)
	}
	if err := rt.Publish(t.Context(), "namespace.ns.component.c.kv-events", []byte("c")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a", "b", "c"} {
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("subscriber got %q, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no message %q", want)
		}
	}
}

func TestEnvelopeBytes(t *testing.T) {
	b, err := runtime.EncodeEnvelope(runtime.Envelope{PublisherID: 5, Sequence: 300, PublishedAt: 1, Topic: "t", Payload: []byte{0xff}, PublishedAtNs: 2})
	if err != nil {
		t.Fatal(err)
	}
	key := func(s string) string { return fmt.Sprintf("%02x%x", 0xa0+len(s), s) }
	want := "86" + key("publisher_id") + "05" + key("sequence") + "cd012c" + key("published_at") + "01" +
		key("topic") + "a174" + key("payload") + "c401ff" + key("published_at_ns") + "02"
	if got := hex.EncodeToString(b); got != want {
		t.Errorf("envelope bytes\n got %s\nwant %s", got, want)
	}
	if _, err := runtime.DecodeEnvelope([]byte("{}")); err == nil {
		t.Error("JSON decoded as an envelope")
	}
}

// waitInterest waits until the NATS server at url has a subscriber on
// subject (want) or no longer has one: a request there is answered "no
// responders" at once when nobody listens, and goes unanswered when
// someone does (an event-plane subscriber skips it: it is no envelope).
func waitInterest(t *testing.T, url, subject string, want bool) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	what := "a subscriber on " + subject
	if !want {
		what = "no subscriber left on " + subject
	}
	testenv.WaitFor(t, 5*time.Second, what, func() bool {
		_, err := nc.Request(subject, nil, 100*time.Millisecond)
		return errors.Is(err, nats.ErrNoResponders) != want
	})
}
