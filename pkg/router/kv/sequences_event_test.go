package kv

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// sortedJSON rewrites a JSON text with sorted keys, as kvblock.PayloadJSON
// renders payloads.
func sortedJSON(t *testing.T, s string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The reference shape of each event (shown as JSON), on the event plane's
// MessagePack encoding.
func TestSequenceEventWire(t *testing.T) {
	tests := []struct {
		name string
		ev   sequenceEvent
		json string
	}{
		{
			name: "add",
			ev: sequenceEvent{RequestID: "r1", Worker: Worker{ID: 5, DPRank: 1}, Op: opAddRequest, RouterID: 7, LoraName: "lora-a",
				Add: &sequenceAdd{TokenSequence: []uint64{1, 18446744073709551615}, ISL: 40, Overlap: 2, ExpectedOutputTokens: new(uint32(100))}},
			json: `{"request_id":"r1","worker":{"worker_id":5,"dp_rank":1},"data":{"AddRequest":{"token_sequence":[1,18446744073709551615],"isl":40,"overlap":2,"expected_output_tokens":100}},"router_id":7,"lora_name":"lora-a"}`,
		},
		{
			name: "add without tracking",
			ev:   sequenceEvent{RequestID: "r2", Op: opAddRequest, RouterID: 7, Add: &sequenceAdd{ISL: 3}},
			json: `{"request_id":"r2","worker":{"worker_id":0,"dp_rank":0},"data":{"AddRequest":{"token_sequence":null,"isl":3,"overlap":0,"expected_output_tokens":null}},"router_id":7,"lora_name":null}`,
		},
		{
			name: "prefill completed",
			ev:   sequenceEvent{RequestID: "r1", Worker: Worker{ID: 5}, Op: opMarkPrefillCompleted, RouterID: 7},
			json: `{"request_id":"r1","worker":{"worker_id":5,"dp_rank":0},"data":"MarkPrefillCompleted","router_id":7,"lora_name":null}`,
		},
		{
			name: "free",
			ev:   sequenceEvent{RequestID: "r1", Worker: Worker{ID: 5}, Op: opFree, RouterID: 7},
			json: `{"request_id":"r1","worker":{"worker_id":5,"dp_rank":0},"data":"Free","router_id":7,"lora_name":null}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := kvblock.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := kvblock.PayloadJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			if want := sortedJSON(t, tc.json); got != want {
				t.Errorf("Marshal:\n got %s\nwant %s", got, want)
			}
			var back sequenceEvent
			if err := kvblock.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.ev, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}

	encode := func(v any) []byte {
		t.Helper()
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var ev sequenceEvent
	if err := kvblock.Unmarshal(encode(map[string]any{"request_id": "x", "worker": map[string]any{"worker_id": 1}, "data": "Free", "router_id": 2}), &ev); err != nil || ev.Op != opFree || ev.Worker.ID != 1 {
		t.Errorf("missing lora_name and dp_rank: %+v, %v", ev, err)
	}
	for name, bad := range map[string]any{
		"unknown unit":    map[string]any{"request_id": "x", "data": "Bogus"},
		"unknown variant": map[string]any{"request_id": "x", "data": map[string]any{"Other": map[string]any{}}},
		"add is nil":      map[string]any{"request_id": "x", "data": map[string]any{"AddRequest": nil}},
		"data is number":  map[string]any{"request_id": "x", "data": 5},
		"not a map":       []int{},
	} {
		ev = sequenceEvent{}
		if err := kvblock.Unmarshal(encode(bad), &ev); err == nil {
			t.Errorf("%s: accepted as %+v", name, ev)
		}
	}
	if _, err := kvblock.Marshal(sequenceEvent{Op: opAddRequest}); err == nil {
		t.Error("AddRequest without data marshalled")
	}
	if _, err := kvblock.Marshal(sequenceEvent{Op: "Bogus"}); err == nil {
		t.Error("unknown op marshalled")
	}
}

// TestSequencesReplicaSync drives router A and ships its events, in their
// wire encoding, to router B: B ends with the same loads, ignores its own echoes, and
// A's own Apply ignores them too.
func TestSequencesReplicaSync(t *testing.T) {
	w1, w2 := Worker{ID: 1}, Worker{ID: 2, DPRank: 3}
	var wire [][]byte
	cfgA := defaultSequencesConfig(4)
	cfgA.RouterID = 100
	a := newTestSequences(t, cfgA, sequencesDeps{Publish: func(ev sequenceEvent) {
		b, err := kvblock.Marshal(ev)
		if err != nil {
			t.Error(err)
		}
		wire = append(wire, b)
	}})
	cfgB := defaultSequencesConfig(4)
	cfgB.RouterID = 200
	var bEvents []sequenceEvent
	b := newTestSequences(t, cfgB, sequencesDeps{Publish: func(ev sequenceEvent) { bEvents = append(bEvents, ev) }})

	mustAdd(t, a, activeRequest{ID: "r1", Worker: w1, Hashes: []uint64{1, 2, 3}, ISL: 12, Overlap: 1, ExpectedOutputTokens: 20})
	mustAdd(t, a, activeRequest{ID: "r2", Worker: w1, Hashes: []uint64{1, 2, 4}, ISL: 12})
	mustAdd(t, a, activeRequest{ID: "r3", Worker: w2, Hashes: []uint64{9}, ISL: 7, LoraName: "l"})
	a.MarkPrefillCompleted("r1")
	a.Free("r2")
	a.MarkPrefillCompleted("unknown") // not published
	a.Free("unknown")
	if len(wire) != 5 {
		t.Fatalf("A published %d events, want 5", len(wire))
	}

	for _, msg := range wire {
		var ev sequenceEvent
		if err := kvblock.Unmarshal(msg, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.RouterID != 100 {
			t.Errorf("event router id %d, want 100", ev.RouterID)
		}
		if err := b.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if err := a.Apply(ev); err != nil { // own echo: ignored
			t.Fatal(err)
		}
	}
	if len(bEvents) != 0 {
		t.Errorf("B re-published %d applied events", len(bEvents))
	}
	probe := []uint64{1, 3, 4, 9}
	if diff := cmp.Diff(a.Loads(probe), b.Loads(probe)); diff != "" {
		t.Errorf("loads differ (-A +B):\n%s", diff)
	}
	if diff := cmp.Diff(a.ActiveLoads(), b.ActiveLoads()); diff != "" {
		t.Errorf("active loads differ (-A +B):\n%s", diff)
	}
	if a.Active() != 2 || b.Active() != 2 {
		t.Errorf("active: A %d, B %d; want 2", a.Active(), b.Active())
	}

	// A replayed add is a duplicate; unknown ops are refused.
	var first sequenceEvent
	if err := kvblock.Unmarshal(wire[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(first); !errors.Is(err, errDuplicateRequest) {
		t.Errorf("replayed add: err = %v, want ErrDuplicateRequest", err)
	}
	if err := b.Apply(sequenceEvent{RequestID: "x", Op: "Bogus", RouterID: 1}); err == nil {
		t.Error("unknown op applied")
	}
	if err := b.Apply(sequenceEvent{RequestID: "x", Op: opAddRequest, RouterID: 1}); err == nil {
		t.Error("add without data applied")
	}

	// Freeing on B after A freed converges to empty.
	for _, id := range []string{"r1", "r3"} {
		a.Free(id)
	}
	for _, msg := range wire[5:] {
		var ev sequenceEvent
		if err := kvblock.Unmarshal(msg, &ev); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if b.Active() != 0 {
		t.Errorf("B still has %d requests", b.Active())
	}
}

// TestSequencesReplicaWithoutBlockTracking: a publisher that does not
// track blocks sends no hashes; the receiver still tracks prefill tokens.
func TestSequencesReplicaWithoutBlockTracking(t *testing.T) {
	cfg := defaultSequencesConfig(4)
	cfg.TrackActiveBlocks = false
	cfg.RouterID = 1
	var got []sequenceEvent
	a := newTestSequences(t, cfg, sequencesDeps{Publish: func(ev sequenceEvent) { got = append(got, ev) }})
	mustAdd(t, a, activeRequest{ID: "r", Worker: Worker{ID: 1}, Hashes: []uint64{1, 2}, ISL: 8})
	if len(got) != 1 || got[0].Add == nil || got[0].Add.TokenSequence != nil {
		t.Fatalf("published %+v, want an AddRequest without token_sequence", got)
	}
	b := newTestSequences(t, defaultSequencesConfig(4), sequencesDeps{})
	if err := b.Apply(got[0]); err != nil {
		t.Fatal(err)
	}
	if l := seqLoad(t, b, Worker{ID: 1}, 1); l != (workerLoad{ActivePrefillTokens: 8, NewBlocks: 1}) {
		t.Errorf("B load %+v", l)
	}
}
