package modeldir

import (
	"encoding/json"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/vllmapi"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// FillVLLM sets what the vLLM API server v takes from the engine's
// configuration c and from the model: the model's name, context length
// (the mocker's default when c has none), KV cache shape, EOS ids and
// tokenizers.
func (m *Model) FillVLLM(v *vllmapi.Config, c mocker.Config) error {
	v.Model, v.ContextLength, v.BlockSize, v.NumGPUBlocks = c.Model, c.ContextLength, c.BlockSize, c.NumGPUBlocks
	if v.ContextLength == 0 {
		v.ContextLength = mocker.DefaultConfig().ContextLength
	}
	v.EOSTokenIDs, v.Tokenize, v.Detokenize = m.EOS, m.Tokenizer.Encode, m.Tokenizer.Decode
	var err error
	v.TokenizeChat, err = ChatTokenizer(m.Card)
	return err
}

// ChatTokenizer is the vLLM API's /tokenize for messages: the model's
// chat template rendered and tokenized as the frontend does it
// (pkg/preprocessor), so that engine preprocessing gives the frontend's
// tokens. Nil when the model has no chat template.
func ChatTokenizer(card *modelcard.Card) (func(*backend.TokenizeRequest) ([]uint32, error), error) {
	if card == nil || card.ChatTemplate == nil {
		return nil, nil
	}
	m, err := preprocessor.NewModel(card, preprocessor.Options{})
	if err != nil {
		return nil, err
	}
	return func(tr *backend.TokenizeRequest) ([]uint32, error) {
		req := &openai.ChatCompletionRequest{
			AddGenerationPrompt:  &tr.AddGenerationPrompt,
			ContinueFinalMessage: &tr.ContinueFinalMessage,
			ChatTemplateKwargs:   tr.ChatTemplateKwargs,
		}
		if err := json.Unmarshal(tr.Messages, &req.Messages); err != nil {
			return nil, fmt.Errorf("%w: messages: %v", vllmapi.ErrBadChat, err)
		}
		if len(tr.Tools) > 0 && string(tr.Tools) != "null" {
			if err := json.Unmarshal(tr.Tools, &req.Tools); err != nil {
				return nil, fmt.Errorf("%w: tools: %v", vllmapi.ErrBadChat, err)
			}
		}
		text, err := m.RenderChat(req)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", vllmapi.ErrBadChat, err)
		}
		ids, err := m.Tokenizer().Encode(text, false)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", vllmapi.ErrBadChat, err)
		}
		return ids, nil
	}, nil
}
