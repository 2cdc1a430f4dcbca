package preprocessor

import (
	"context"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// The placement the routing stages stamp on outputs reaches the chunk
// events, the latest one winning (a migrated request ends on its second
// worker).
func TestChunksCarryTheWorkersPlacement(t *testing.T) {
	m := demoModel(t)
	first, second := &backend.Placement{WorkerID: 1}, &backend.Placement{WorkerID: 2}
	eng := backend.GeneratorFunc(func(_ context.Context, _ *backend.Request, emit func(*backend.Output) error) error {
		// Ids of "Hello world" in the demo tokenizer: H ell o " wor" ld.
		for i, id := range []uint32{39, 371, 78} {
			out := backend.Tokens(id)
			out.Placement = first
			if i == 2 {
				out.Placement = second
			}
			if err := emit(out); err != nil {
				return err
			}
		}
		out := backend.Length(437)
		out.Placement = second
		return emit(out)
	})
	var got []*backend.Placement
	req := decodeCompletion(t, `{"model":"demo","prompt":"x","max_tokens":4,"stream":true}`)
	err := m.Complete(context.Background(), "p", req, eng, func(ev Event) error {
		if ev.Stats != nil && ev.Name == "" {
			got = append(got, ev.Stats.Placement)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0] != first || got[len(got)-1] != second {
		t.Fatalf("chunk placements %v, want the first worker's first and the second worker's last", got)
	}
}
