package frontend

import (
	"context"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Models is what the HTTP layer asks of the served models: a
// *pipeline.Registry through ServeRegistry, or a fake in tests that
// exercise HTTP without a running stack.
type Models interface {
	// Lookup returns the model served under name (any of its names), or
	// nil.
	Lookup(name string) ServedModel
	// Models returns every model with a card, ready or not.
	Models() []ServedModel
	// Synced reports whether the first discovery listing was read.
	Synced() bool
	// Instances returns the worker instances discovered.
	Instances() []runtime.Instance
	// Discovery is the state of the link to discovery.
	Discovery() runtime.DiscoveryStatus
}

// ServedModel is one served model as the HTTP layer uses it
// (*pipeline.Model): what it is, whether it can serve now, and the entry
// points that run a request through its preprocessor and its chain.
type ServedModel interface {
	Name() string
	Card() *modelcard.Card
	Serves(t modelcard.ModelType) bool
	Ready() bool

	Chat(ctx context.Context, id string, req *openai.ChatCompletionRequest, emit func(preprocessor.Event) error) error
	Complete(ctx context.Context, id string, req *openai.CompletionRequest, emit func(preprocessor.Event) error) error
	Embed(ctx context.Context, id string, req *openai.EmbeddingRequest) (*openai.EmbeddingResponse, error)
	PrepareChat(req *openai.ChatCompletionRequest) (*preprocessor.Prepared, error)
	PrepareCompletion(req *openai.CompletionRequest) (*preprocessor.Prepared, error)

	// Decide answers where a prepared request would be routed
	// (pipeline.ErrNotKVRouted unless KV-routed); KVRouting names the KV
	// routing mode (ok false when not KV-routed).
	Decide(req *backend.Request) (*backend.Placement, error)
	KVRouting() (mode string, fallback, ok bool)
	BusyThresholds() (pipeline.BusyThresholds, error)
	UpdateBusyThresholds(u pipeline.BusyThresholds) (pipeline.BusyThresholds, error)
	// CountRefusal counts a refusal made before the model's chain (the
	// tenant limit) and returns the Retry-After the admission queue
	// estimates.
	CountRefusal(reason string) time.Duration
}

var _ ServedModel = (*pipeline.Model)(nil)

// ServeRegistry returns reg as the HTTP layer's Models.
func ServeRegistry(reg *pipeline.Registry) Models { return registryModels{reg} }

type registryModels struct{ *pipeline.Registry }

func (r registryModels) Lookup(name string) ServedModel {
	if m := r.Registry.Lookup(name); m != nil {
		return m
	}
	return nil // not a non-nil interface holding a nil *pipeline.Model
}

func (r registryModels) Models() []ServedModel {
	ms := r.Registry.Models()
	out := make([]ServedModel, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
