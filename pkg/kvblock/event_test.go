package kvblock

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEventJSONRoundTrip(t *testing.T) {
	parent := uint64(1188)
	tests := []struct {
		name string
		ev   RouterEvent
		json string
	}{
		{
			name: "stored",
			ev: RouterEvent{WorkerID: 7587886413599009306, Event: KVCacheEvent{EventID: 42, Data: Stored(&parent,
				StoredBlock{BlockHash: 99123, TokensHash: 3480597578098033343})}},
			json: `{"worker_id":7587886413599009306,"event":{"event_id":42,"data":{"stored":{"parent_hash":1188,"blocks":[{"block_hash":99123,"tokens_hash":3480597578098033343}]}},"dp_rank":0}}`,
		},
		{
			name: "stored at root",
			ev: RouterEvent{WorkerID: 1, Event: KVCacheEvent{EventID: 0, DPRank: 2, Data: Stored(nil,
				StoredBlock{BlockHash: 1, TokensHash: 2}, StoredBlock{BlockHash: 18446744073709551615, TokensHash: 4})}},
			json: `{"worker_id":1,"event":{"event_id":0,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2},{"block_hash":18446744073709551615,"tokens_hash":4}]}},"dp_rank":2}}`,
		},
		{
			name: "removed",
			ev:   RouterEvent{WorkerID: 7, Event: KVCacheEvent{EventID: 43, Data: Removed(99123, 5)}},
			json: `{"worker_id":7,"event":{"event_id":43,"data":{"removed":{"block_hashes":[99123,5]}},"dp_rank":0}}`,
		},
		{
			name: "cleared",
			ev:   RouterEvent{WorkerID: 7, Event: KVCacheEvent{EventID: 44, Data: Cleared()}},
			json: `{"worker_id":7,"event":{"event_id":44,"data":"cleared","dp_rank":0}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.json {
				t.Errorf("marshal:\n got %s\nwant %s", b, tc.json)
			}
			var back RouterEvent
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.ev, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventJSONTolerant(t *testing.T) {
	in := `{"worker_id":3,"extra":true,"event":{"event_id":9,"data":{"stored":{"parent_hash":-1,` +
		`"blocks":[{"block_hash":-2,"tokens_hash":7,"mm_extra_info":null}],"start_position":4}}}}`
	var got RouterEvent
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	p := ^uint64(0)
	pos := uint32(4)
	want := RouterEvent{WorkerID: 3, Event: KVCacheEvent{EventID: 9, Data: EventData{Stored: &StoreData{
		ParentHash: &p, StartPosition: &pos,
		Blocks: []StoredBlock{{BlockHash: ^uint64(0) - 1, TokensHash: 7}},
	}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var rm EventData
	if err := json.Unmarshal([]byte(`{"removed":{"block_hashes":[-1]}}`), &rm); err != nil || rm.Removed.BlockHashes[0] != ^uint64(0) {
		t.Errorf("removed: %+v, %v", rm, err)
	}
}

func TestEventJSONErrors(t *testing.T) {
	for _, in := range []string{`"bogus"`, `{"stored":{},"removed":{}}`, `{"other":{}}`, `{}`, `42`,
		`{"removed":{"block_hashes":["x"]}}`, `{"stored":{"blocks":[{"block_hash":1.5}]}}`} {
		var d EventData
		if err := json.Unmarshal([]byte(in), &d); !errors.Is(err, ErrBadEvent) {
			t.Errorf("%s: err = %v, want ErrBadEvent", in, err)
		}
	}
	if _, err := json.Marshal(EventData{}); !errors.Is(err, ErrBadEvent) {
		t.Errorf("marshal zero: %v", err)
	}
	if k := (EventData{}).Kind(); k != "" {
		t.Errorf("zero kind %q", k)
	}
}

func TestLoadEventJSON(t *testing.T) {
	r := uint32(1)
	ev := LoadEvent{WorkerID: 5, Data: ForwardPassMetrics{
		WorkerStats: WorkerStats{DataParallelRank: &r, RequestActiveSlots: 2, RequestTotalSlots: 1024, NumRequestsWaiting: 3},
		KVStats:     KVStats{KVActiveBlocks: 10, KVTotalBlocks: 100, GPUCacheUsagePerc: 0.1, GPUPrefixCacheHitRate: 0.5},
	}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"worker_id":5,"data":{"worker_stats":{"data_parallel_rank":1,"request_active_slots":2,"request_total_slots":1024,"num_requests_waiting":3},"kv_stats":{"kv_active_blocks":10,"kv_total_blocks":100,"gpu_cache_usage_perc":0.1,"gpu_prefix_cache_hit_rate":0.5},"spec_decode_stats":null}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back LoadEvent
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.Data.SpecDecodeStats = nil
	if diff := cmp.Diff(ev, back); diff != "" {
		t.Error(diff)
	}
}

func TestSubjects(t *testing.T) {
	if got := KVEventsSubject("dynamo", "backend"); got != "namespace.dynamo.component.backend.kv-events" {
		t.Error(got)
	}
	if got := LoadMetricsSubject("dynamo"); got != "namespace.dynamo.kv_metrics" {
		t.Error(got)
	}
}
