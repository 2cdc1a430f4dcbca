package mocker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// prefillAnswer ends a prefill engine's stream: it sleeps the KV transfer
// time of the prompt (Config.transferTime, divided by the speedup ratio),
// marks the request's bootstrap room done, and emits the single output:
// the first token, the finish reason, usage and disaggregated_params
// naming this worker and rank. The transfer comes before the answer, so
// that with either handoff the decode starts when the KV cache would be
// there. A request stopped meanwhile ends cancelled; a killed one returns
// its context's cause.
func (e *Engine) prefillAnswer(ctx context.Context, rk *rank, req *backend.Request, fin *backend.Output,
	terminal func(*backend.Output) error) error {
	if d := scale(e.cfg.transferTime(len(req.TokenIDs)), e.cfg.SpeedupRatio); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-backend.Stopped(ctx):
			t.Stop()
			return terminal(backend.Cancelled())
		case <-e.done:
			t.Stop()
			return fmt.Errorf("mocker: %w", backend.ErrEngineShutdown)
		}
	}
	params, err := json.Marshal(backend.DisaggregatedParams{WorkerID: &backend.PrefillWorker{
		PrefillWorkerID: e.workerID, PrefillDPRank: uint32(rk.idx)}})
	if err != nil {
		return fmt.Errorf("mocker: disaggregated_params: %w", err)
	}
	fin.DisaggregatedParams = params
	if room, ok := e.bootstrapRoom(req); ok {
		e.boot.complete(room, true)
	}
	return terminal(fin)
}

// bootstrapRoom returns the room of a prefill request for the bootstrap
// handoff, when it has one and this engine runs a bootstrap server.
func (e *Engine) bootstrapRoom(req *backend.Request) (uint64, bool) {
	if e.boot == nil || req.BootstrapInfo == nil {
		return 0, false
	}
	return req.BootstrapInfo.Room, true
}

// handedOver reports whether a decode engine takes req's prompt KV cache
// as transferred from a prefill worker: the request carries a
// PrefillResult (synchronous handoff) or BootstrapInfo (bootstrap
// handoff). Such a prompt's blocks are allocated without prefill time;
// any other request is prefilled in full, as by an aggregated engine.
func (e *Engine) handedOver(req *backend.Request) bool {
	return e.cfg.DisaggregationMode == ModeDecode && (req.PrefillResult != nil || req.BootstrapInfo != nil)
}

// handedCached is the prefix-cache hit the prefill reported in its
// prompt_tokens_details, for the decode's usage; 0 when unknown.
func handedCached(req *backend.Request) int {
	if req.PrefillResult == nil || len(req.PrefillResult.PromptTokensDetails) == 0 {
		return 0
	}
	var d backend.PromptDetail
	if json.Unmarshal(req.PrefillResult.PromptTokensDetails, &d) != nil || d.CachedTokens < 0 {
		return 0
	}
	return min(d.CachedTokens, len(req.TokenIDs))
}
