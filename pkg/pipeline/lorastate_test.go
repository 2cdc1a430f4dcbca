package pipeline

import (
	"slices"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/router"
)

// An adapter's requests go first where it is active, then where a slot is
// free, then anywhere it is held; what no worker said yet counts as
// held only.
func TestLoraTiers(t *testing.T) {
	s := &loraStates{byWorker: map[uint64]modelcard.LoraResult{
		1: {MaxLoras: 1, ActiveSlots: 1, Adapters: []modelcard.LoraState{{Name: "a", Active: false}, {Name: "b", Active: true}}},
		2: {MaxLoras: 1, ActiveSlots: 1, Adapters: []modelcard.LoraState{{Name: "a", Active: true}}},
		3: {MaxLoras: 2, ActiveSlots: 1, Adapters: []modelcard.LoraState{{Name: "a"}, {Name: "c", Active: true}}},
		4: {Adapters: []modelcard.LoraState{{Name: "d"}}}, // no limit: always a free slot
	}}
	for _, tc := range []struct {
		name       string
		candidates []uint64
		want       []uint64
	}{
		{"a", []uint64{1, 2, 3}, []uint64{2}},   // active on 2
		{"a", []uint64{1, 3}, []uint64{3}},      // 2 unavailable: 3 has a free slot
		{"a", []uint64{1}, []uint64{1}},         // only a swap is left
		{"d", []uint64{4, 9}, []uint64{4}},      // 9 has not answered yet
		{"e", []uint64{9, 10}, []uint64{9, 10}}, // nobody answered: all
	} {
		if got := s.tier(tc.name, tc.candidates); !slices.Equal(got, tc.want) {
			t.Errorf("tier(%q, %v) = %v, want %v", tc.name, tc.candidates, got, tc.want)
		}
	}
	p := loraPolicy{Policy: &router.RoundRobin{}, states: s, name: "a"}
	for range 4 {
		if id, err := p.Pick(&backend.Request{}, []uint64{1, 2, 3}); err != nil || id != 2 {
			t.Fatalf("picked %d (%v), want the worker where the adapter is active", id, err)
		}
	}
	if got := s.activeOn("a"); !slices.Equal(got, []uint64{2}) {
		t.Errorf("activeOn(a) = %v, want [2]", got)
	}
}
