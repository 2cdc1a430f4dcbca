package preprocessor

import (
	"encoding/json"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// withPriorityJump sets r's priority jump in the frontend's admission
// queue (spec kvrouter_mocker.md §4.6: priority_jump from
// nvext.agent_hints.latency_sensitivity or priority): the hint's
// latency_sensitivity in seconds when it is > 0, else its priority when
// that is > 0. agent_hints that do not parse are ignored, as other hints
// are. (A top-level nvext.priority is not an nvext field: it is refused
// as unknown, 400.)
func withPriorityJump(r *backend.Request, nv *openai.NvExt) {
	if nv == nil || len(nv.AgentHints) == 0 {
		return
	}
	var h struct {
		LatencySensitivity *float64 `json:"latency_sensitivity"`
		Priority           *float64 `json:"priority"`
	}
	if json.Unmarshal(nv.AgentHints, &h) != nil {
		return
	}
	jump := h.LatencySensitivity
	if jump == nil || !(*jump > 0) {
		jump = h.Priority
	}
	if jump == nil || !(*jump > 0) {
		return
	}
	if r.Routing == nil {
		r.Routing = &backend.Routing{}
	}
	r.Routing.PriorityJump = jump
}
