package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
	time.Sleep(50 * time.Millisecond) // let the subscription reach the server
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
	time.Sleep(50 * time.Millisecond)
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
