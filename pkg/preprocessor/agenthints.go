package preprocessor

import (
	"encoding/json"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// withPriorityJump sets r's priority jump in the frontend's admission
// queue from nvext.agent_hints.latency_sensitivity (seconds, > 0);
// agent_hints that do not parse are ignored, as other hints are.
func withPriorityJump(r *backend.Request, nv *openai.NvExt) {
	if nv == nil || len(nv.AgentHints) == 0 {
		return
	}
	var h struct {
		LatencySensitivity *float64 `json:"latency_sensitivity"`
	}
	if json.Unmarshal(nv.AgentHints, &h) != nil || h.LatencySensitivity == nil || !(*h.LatencySensitivity > 0) {
		return
	}
	if r.Routing == nil {
		r.Routing = &backend.Routing{}
	}
	r.Routing.PriorityJump = h.LatencySensitivity
}
