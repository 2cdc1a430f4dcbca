package router_test

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// The routing span names the policy and the instance that answered, and
// carries what an earlier stage decided (the KV router's overlap) through
// the context.
func TestRouteSpan(t *testing.T) {
	f := newFleet(t, 2)
	rec := tracetest.NewSpanRecorder()
	r := router.New(f.client, &router.RoundRobin{}, nil, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	id, err := ask(t, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := runtime.NewContext(telemetry.WithAttributes(t.Context(), attribute.String("router.policy", "kv"), attribute.Int("kv.overlap_blocks", 3)), "")
	defer rc.Release()
	if err := r.GenerateOn(rc, id, &backend.Request{}, func(*backend.Output) error { return nil }); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2 route spans", len(spans))
	}
	want := []map[attribute.Key]string{
		{"router.policy": "round_robin", "worker.instance_id": fmt.Sprintf("%x", id)},
		{"router.policy": "kv", "worker.instance_id": fmt.Sprintf("%x", id), "kv.overlap_blocks": "3"},
	}
	for i, s := range spans {
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			got[kv.Key] = kv.Value.Emit()
		}
		for k, v := range want[i] {
			if s.Name() != "route" || got[k] != v {
				t.Errorf("span %d %q: %s = %q, want %q (all: %v)", i, s.Name(), k, got[k], v, got)
			}
		}
	}
}
