package frontend

import (
	"encoding/json"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// nvext.worker_id names the prefill and the decode worker: the same one
// when the decode worker prefilled, the prefill worker's own otherwise.
func TestWorkerInfoNamesPrefillAndDecode(t *testing.T) {
	rank := uint32(1)
	cases := []struct {
		p    *backend.Placement
		want string
	}{
		{&backend.Placement{WorkerID: 7}, `{"prefill_worker_id":7,"decode_worker_id":7}`},
		{&backend.Placement{WorkerID: 7, DPRank: &rank, PrefillWorkerID: backend.Ptr(uint64(9)), PrefillDPRank: backend.Ptr(uint32(0))},
			`{"prefill_worker_id":9,"decode_worker_id":7,"prefill_dp_rank":0,"dp_rank":1}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(workerInfoOf(c.p))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("worker_id of %+v: %s, want %s", c.p, b, c.want)
		}
	}
}
