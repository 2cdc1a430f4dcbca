package frontend

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// fakeModels is the served models without a stack behind them: the HTTP
// tests that need no worker give it the models they want.
type fakeModels struct {
	served []ServedModel
	boom   atomic.Bool // listing the models panics while set: a bug in a handler's path
}

func (f *fakeModels) Lookup(name string) ServedModel {
	for _, m := range f.served {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

func (f *fakeModels) Models() []ServedModel {
	if f.boom.Load() {
		panic("boom: a bug in a handler")
	}
	return f.served
}

func (f *fakeModels) Synced() bool                       { return true }
func (f *fakeModels) Instances() []runtime.Instance      { return nil }
func (f *fakeModels) Discovery() runtime.DiscoveryStatus { return runtime.DiscoveryStatus{} }

// echoModel is a chat model that answers with the words of the last
// message, one chunk a word, then a stop.
type echoModel struct{ name string }

var errFakeModel = errors.New("echoModel: not served by the fake")

func (e *echoModel) Name() string { return e.name }
func (e *echoModel) Card() *modelcard.Card {
	return &modelcard.Card{DisplayName: e.name, ModelType: modelcard.ModelChat}
}
func (e *echoModel) Serves(t modelcard.ModelType) bool { return t == modelcard.ModelChat }
func (e *echoModel) Ready() bool                       { return true }

func (e *echoModel) Chat(ctx context.Context, id string, req *openai.ChatCompletionRequest, emit func(preprocessor.Event) error) error {
	var last string
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Content.Text != nil {
		last = *req.Messages[n-1].Content.Text
	}
	words := strings.Fields(last)
	chunk := func(delta openai.ChatDelta, finish *string, tokens int) error {
		c := &openai.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: e.name,
			Choices: []openai.ChatChunkChoice{{Delta: delta, FinishReason: finish}}}
		return emit(preprocessor.Event{Data: c, Stats: &preprocessor.Stats{PromptTokens: len(words), Tokens: tokens}})
	}
	if err := chunk(openai.ChatDelta{Role: "assistant"}, nil, 0); err != nil {
		return err
	}
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		if err := chunk(openai.ChatDelta{Content: &w}, nil, 1); err != nil {
			return err
		}
	}
	stop := "stop"
	return chunk(openai.ChatDelta{}, &stop, 0)
}

func (e *echoModel) Complete(context.Context, string, *openai.CompletionRequest, func(preprocessor.Event) error) error {
	return errFakeModel
}
func (e *echoModel) Embed(context.Context, string, *openai.EmbeddingRequest) (*openai.EmbeddingResponse, error) {
	return nil, errFakeModel
}
func (e *echoModel) PrepareChat(*openai.ChatCompletionRequest) (*preprocessor.Prepared, error) {
	return nil, errFakeModel
}
func (e *echoModel) PrepareCompletion(*openai.CompletionRequest) (*preprocessor.Prepared, error) {
	return nil, errFakeModel
}
func (e *echoModel) Decide(*backend.Request) (*backend.Placement, error) {
	return nil, pipeline.ErrNotKVRouted
}
func (e *echoModel) KVRouting() (string, bool, bool) { return "", false, false }
func (e *echoModel) BusyThresholds() (pipeline.BusyThresholds, error) {
	return pipeline.BusyThresholds{}, pipeline.ErrNotKVRouted
}
func (e *echoModel) UpdateBusyThresholds(pipeline.BusyThresholds) (pipeline.BusyThresholds, error) {
	return pipeline.BusyThresholds{}, pipeline.ErrNotKVRouted
}
func (e *echoModel) CountRefusal(string) time.Duration { return 0 }
