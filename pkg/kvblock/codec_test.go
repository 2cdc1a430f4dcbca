package kvblock

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

// The exact bytes rmp_serde::to_vec_named writes for the spec's first
// example event (field order of the reference structs, most compact
// integers, the variant as a one-entry map), assembled by hand.
func TestMarshalRouterEventBytes(t *testing.T) {
	parent := uint64(1188)
	ev := RouterEvent{WorkerID: 7, Event: KVCacheEvent{EventID: 42, Data: Stored(&parent,
		StoredBlock{BlockHash: 99123, TokensHash: 3480597578098033343})}}
	want := "82" + // map of 2
		"a9" + hex.EncodeToString([]byte("worker_id")) + "07" +
		"a5" + hex.EncodeToString([]byte("event")) + "83" +
		"a8" + hex.EncodeToString([]byte("event_id")) + "2a" +
		"a4" + hex.EncodeToString([]byte("data")) + "81" +
		"a6" + hex.EncodeToString([]byte("stored")) + "82" +
		"ab" + hex.EncodeToString([]byte("parent_hash")) + "cd04a4" + // u16 1188
		"a6" + hex.EncodeToString([]byte("blocks")) + "91" + "82" +
		"aa" + hex.EncodeToString([]byte("block_hash")) + "ce00018333" + // u32 99123
		"ab" + hex.EncodeToString([]byte("tokens_hash")) + "cf304d910e689e42bf" + // u64
		"a7" + hex.EncodeToString([]byte("dp_rank")) + "00"
	b, err := Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b); got != want {
		t.Errorf("Marshal:\n got %s\nwant %s", got, want)
	}
}

// Every event kind has the reference field names and shape (checked as
// sorted JSON) and decodes back to itself.
func TestMarshalEventShapes(t *testing.T) {
	tests := []struct {
		name string
		v    any
		into any
		json string
	}{
		{
			name: "stored at root",
			v: RouterEvent{WorkerID: 1, Event: KVCacheEvent{EventID: 0, DPRank: 2, Data: Stored(nil,
				StoredBlock{BlockHash: 1, TokensHash: 2, MMExtraInfo: &MMExtraInfo{MMObjects: []MMObject{{MMHash: 9, Offsets: [][]uint64{{0, 4}}}}}},
				StoredBlock{BlockHash: 18446744073709551615, TokensHash: 4})}},
			into: &RouterEvent{},
			json: `{"event":{"data":{"stored":{"blocks":[{"block_hash":1,"mm_extra_info":{"mm_objects":[{"mm_hash":9,"offsets":[[0,4]]}]},"tokens_hash":2},{"block_hash":18446744073709551615,"tokens_hash":4}],"parent_hash":null}},"dp_rank":2,"event_id":0},"worker_id":1}`,
		},
		{
			name: "removed",
			v:    RouterEvent{WorkerID: 7, Event: KVCacheEvent{EventID: 43, Data: Removed(99123, 5)}},
			into: &RouterEvent{},
			json: `{"event":{"data":{"removed":{"block_hashes":[99123,5]}},"dp_rank":0,"event_id":43},"worker_id":7}`,
		},
		{
			name: "cleared",
			v:    RouterEvent{WorkerID: 7, Event: KVCacheEvent{EventID: 44, Data: Cleared()}},
			into: &RouterEvent{},
			json: `{"event":{"data":"cleared","dp_rank":0,"event_id":44},"worker_id":7}`,
		},
		{
			name: "load",
			v: LoadEvent{WorkerID: 5, Data: ForwardPassMetrics{
				WorkerStats: WorkerStats{RequestActiveSlots: 2, RequestTotalSlots: 1024, NumRequestsWaiting: 3},
				KVStats:     KVStats{KVActiveBlocks: 10, KVTotalBlocks: 100, GPUCacheUsagePerc: 0.5, GPUPrefixCacheHitRate: 0.25},
			}},
			into: &LoadEvent{},
			json: `{"data":{"kv_stats":{"gpu_cache_usage_perc":0.5,"gpu_prefix_cache_hit_rate":0.25,"kv_active_blocks":10,"kv_total_blocks":100},"spec_decode_stats":null,"worker_stats":{"data_parallel_rank":null,"num_requests_waiting":3,"request_active_slots":2,"request_total_slots":1024}},"worker_id":5}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := PayloadJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.json {
				t.Errorf("shape:\n got %s\nwant %s", got, tc.json)
			}
			if err := Unmarshal(b, tc.into); err != nil {
				t.Fatal(err)
			}
			back := tc.into
			switch v := back.(type) {
			case *RouterEvent:
				back = *v
			case *LoadEvent:
				back = *v
			}
			if diff := cmp.Diff(tc.v, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// What other publishers may send: hashes as signed integers (Python
// engines), no dp_rank, unknown fields, "cleared" as a map entry.
func TestUnmarshalTolerant(t *testing.T) {
	encode := func(v any) []byte {
		t.Helper()
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var ev RouterEvent
	err := Unmarshal(encode(map[string]any{
		"worker_id": 3,
		"event": map[string]any{"event_id": 1, "extra": []int{1}, "data": map[string]any{"stored": map[string]any{
			"parent_hash": int64(-2),
			"blocks":      []any{map[string]any{"block_hash": int64(-1), "tokens_hash": int64(5), "mm_extra_info": nil}},
		}}},
	}), &ev)
	if err != nil {
		t.Fatal(err)
	}
	p := uint64(1<<64 - 2)
	want := RouterEvent{WorkerID: 3, Event: KVCacheEvent{EventID: 1, Data: Stored(&p, StoredBlock{BlockHash: 1<<64 - 1, TokensHash: 5})}}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	err = Unmarshal(encode(map[string]any{"worker_id": 3, "event": map[string]any{"event_id": 2, "data": map[string]any{"removed": map[string]any{"block_hashes": []int64{-1, 7}}}}}), &ev)
	if err != nil || ev.Event.Data.Removed == nil || ev.Event.Data.Removed.BlockHashes[0] != 1<<64-1 || ev.Event.Data.Removed.BlockHashes[1] != 7 {
		t.Errorf("removed with signed hashes: %+v, %v", ev.Event.Data.Removed, err)
	}
	err = Unmarshal(encode(map[string]any{"worker_id": 3, "event": map[string]any{"event_id": 2, "data": map[string]any{"cleared": nil}}}), &ev)
	if err != nil || !ev.Event.Data.Cleared {
		t.Errorf("cleared as a map entry: %+v, %v", ev.Event.Data, err)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	for name, v := range map[string]any{
		"unknown kind":     map[string]any{"event": map[string]any{"data": "bogus"}},
		"unknown variant":  map[string]any{"event": map[string]any{"data": map[string]any{"moved": nil}}},
		"two variants":     map[string]any{"event": map[string]any{"data": map[string]any{"stored": nil, "removed": nil}}},
		"data is a number": map[string]any{"event": map[string]any{"data": 5}},
		"not a map":        []int{1, 2},
	} {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var ev RouterEvent
		if err := Unmarshal(b, &ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("%s: err = %v, want ErrBadEvent", name, err)
		}
	}
	var ev RouterEvent
	if err := Unmarshal([]byte{0xc1}, &ev); !errors.Is(err, ErrBadEvent) {
		t.Errorf("a reserved byte: err = %v, want ErrBadEvent", err)
	}
	if _, err := Marshal(RouterEvent{}); err == nil {
		t.Error("an event without data was encoded")
	}
	if _, err := PayloadJSON([]byte{0xc1}); !errors.Is(err, ErrBadEvent) {
		t.Errorf("PayloadJSON of garbage: %v", err)
	}
}
