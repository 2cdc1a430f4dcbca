package pipeline

import (
	"context"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// loraStage is the head of a LoRA adapter's chain: it names the adapter
// in every request (Routing.LoraName), so that the KV router hashes the
// prompt's blocks with the adapter's salt and the worker's engine applies
// the adapter. A request that names an adapter itself keeps it.
type loraStage struct {
	next backend.Generator
	name string
}

func (s loraStage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if rt := req.Routing; rt == nil || rt.LoraName == nil {
		r := *req
		named := backend.Routing{}
		if rt != nil {
			named = *rt
		}
		named.LoraName = &s.name
		r.Routing = &named
		req = &r
	}
	return s.next.Generate(ctx, req, emit)
}
