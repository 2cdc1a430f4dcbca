package preprocessor

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// ErrNoEngineTokenizer is NewModel's error for a card that says
// preprocessing "engine" without Options.EngineTokenizer.
var ErrNoEngineTokenizer = errors.New("preprocessor: the model card says preprocessing \"engine\" but no engine tokenizer was given")

// nativePreprocessing reports whether the card asks for the engine's
// chat template and tokenizer.
func nativePreprocessing(card *modelcard.Card) bool {
	return card.RuntimeConfig.Preprocessing == modelcard.ProcessingEngine
}

// tokenizeRequest builds the engine's tokenize request for a chat request:
// the messages and tools as the client sent them (no tools when
// tool_choice is "none"), the generation prompt flags and the template
// arguments.
func tokenizeRequest(model string, req *openai.ChatCompletionRequest) (*backend.TokenizeRequest, error) {
	cont := req.ContinueFinalMessage != nil && *req.ContinueFinalMessage
	addGen := !cont
	if req.AddGenerationPrompt != nil {
		addGen = *req.AddGenerationPrompt
	}
	if cont && addGen {
		return nil, invalid("continue_final_message and add_generation_prompt cannot both be true")
	}
	msgs, err := json.Marshal(req.Messages)
	if err != nil {
		return nil, invalidParam("messages", "messages: %v", err)
	}
	tr := &backend.TokenizeRequest{Model: model, Messages: msgs, AddGenerationPrompt: addGen, ContinueFinalMessage: cont}
	if len(req.Tools) > 0 && !req.ToolChoiceNone() {
		if tr.Tools, err = json.Marshal(req.Tools); err != nil {
			return nil, invalidParam("tools", "tools: %v", err)
		}
	}
	for _, raw := range []json.RawMessage{req.ChatTemplateArgs, req.ChatTemplateKwargs} {
		if len(raw) > 0 && string(raw) != "null" {
			tr.ChatTemplateKwargs = raw
		}
	}
	return tr, nil
}

// tokenizeNative asks the engine for req's prompt tokens.
func (m *Model) tokenizeNative(ctx context.Context, req *openai.ChatCompletionRequest) ([]uint32, error) {
	tr, err := tokenizeRequest(m.card.DisplayName, req)
	if err != nil {
		return nil, err
	}
	ids, err := m.engineTok.TokenizeChat(ctx, tr)
	if errors.Is(err, backend.ErrInvalidArgument) {
		return nil, invalidParam("messages", "the engine's chat template or tokenizer refused the request: %v", err)
	}
	if err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []uint32{}
	}
	return ids, nil
}

// encodeEngine asks the engine for a text prompt's tokens (a model whose
// card has no tokenizer), with the special tokens its own tokenizer adds
// when addSpecial is set. A refusal is a validation error on param.
func (m *Model) encodeEngine(ctx context.Context, text string, addSpecial bool, param string) ([]uint32, error) {
	ids, err := m.engineTok.TokenizeChat(ctx, &backend.TokenizeRequest{Model: m.card.DisplayName, Prompt: &text, AddSpecialTokens: addSpecial})
	if errors.Is(err, backend.ErrInvalidArgument) {
		return nil, invalidParam(param, "the engine's tokenizer refused the prompt: %v", err)
	}
	if err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []uint32{}
	}
	return ids, nil
}
