package frontend

import (
	"encoding/json"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// workerInfo is the nvext worker_id extra field and the query_instance_id
// answer: the workers chosen for the request, the one that prefilled its
// prompt and the one that decoded it (the same worker unless the model is
// served disaggregated), and, with KV routing, how much of the prompt the
// decode worker holds.
type workerInfo struct {
	PrefillWorkerID uint64  `json:"prefill_worker_id"`
	DecodeWorkerID  uint64  `json:"decode_worker_id"`
	PrefillDPRank   *uint32 `json:"prefill_dp_rank,omitempty"`
	DPRank          *uint32 `json:"dp_rank,omitempty"`
	OverlapBlocks   *uint32 `json:"overlap_blocks,omitempty"`
	PromptBlocks    *int    `json:"prompt_blocks,omitempty"`
}

// workerInfoOf reports a placement (none: worker 0).
func workerInfoOf(p *backend.Placement) workerInfo {
	if p == nil {
		return workerInfo{}
	}
	w := workerInfo{PrefillWorkerID: p.WorkerID, DecodeWorkerID: p.WorkerID, PrefillDPRank: p.DPRank, DPRank: p.DPRank,
		OverlapBlocks: p.OverlapBlocks, PromptBlocks: p.PromptBlocks}
	if p.PrefillWorkerID != nil {
		w.PrefillWorkerID, w.PrefillDPRank = *p.PrefillWorkerID, p.PrefillDPRank
	}
	return w
}

// attachWorker sets the response's nvext.worker_id when the client asked.
func (x *exchange) attachWorker(resp any) {
	if !x.wantWorker {
		return
	}
	b, err := json.Marshal(map[string]any{"worker_id": workerInfoOf(x.placement)})
	if err != nil {
		return
	}
	switch r := resp.(type) {
	case *openai.ChatCompletionChunk:
		r.NvExt = b
	case *openai.Completion:
		r.NvExt = b
	case *openai.ChatCompletion:
		r.NvExt = b
	}
}

// finishes reports whether a chunk carries a finish reason.
func finishes(data any) bool {
	switch c := data.(type) {
	case *openai.ChatCompletionChunk:
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				return true
			}
		}
	case *openai.Completion:
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				return true
			}
		}
	}
	return false
}

// query answers the query_instance_id annotation: where the request would
// go, and its prompt's token ids, without generating (needs the kv router
// mode, whose choice depends on the prompt).
func (x *exchange) query(req apiRequest, stream bool, m ServedModel) {
	if _, _, ok := m.KVRouting(); !ok {
		x.fail(apiError{status: http.StatusBadRequest, kind: ErrValidation, message: "Validation: the query_instance_id annotation needs --router-mode kv", param: ""}, false)
		return
	}
	pr, ok := req.(preparedRequest)
	if !ok {
		x.fail(apiError{status: http.StatusBadRequest, kind: ErrValidation, message: "Validation: the query_instance_id annotation is for chat and completions requests", param: ""}, false)
		return
	}
	prep, err := pr.prepare(m)
	if err != nil {
		x.fail(x.failure(err), false)
		return
	}
	placement, err := m.Decide(prep.Request)
	if err != nil {
		x.fail(x.failure(err), false)
		return
	}
	info := workerInfoOf(placement)
	if !stream {
		writeJSON(x.w, http.StatusOK, map[string]any{"worker_instance_id": info, "token_data": prep.Request.TokenIDs})
		x.g.OK()
		return
	}
	startSSE(x.w)
	for _, ev := range []preprocessor.Event{{Name: "worker_instance_id", Data: info}, {Name: "token_data", Data: prep.Request.TokenIDs}} {
		if err := openai.WriteSSE(x.w, ev.Name, ev.Data); err != nil {
			x.cancelled()
			return
		}
	}
	_, _ = x.w.Write([]byte(openai.SSEDone))
	_ = http.NewResponseController(x.w).Flush()
	x.g.OK()
}
