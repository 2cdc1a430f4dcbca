package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

var _ backend.ChatTokenizer = (*Engine)(nil)

// vllmTokenizeChat is the body of vLLM's POST /tokenize for a
// conversation (TokenizeChatRequest).
type vllmTokenizeChat struct {
	Model                string          `json:"model,omitempty"`
	Messages             json.RawMessage `json:"messages"`
	Tools                json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt  bool            `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	AddSpecialTokens     bool            `json:"add_special_tokens"`
	ChatTemplateKwargs   json.RawMessage `json:"chat_template_kwargs,omitempty"`
}

// TokenizeChat renders and tokenizes a conversation with the engine's own
// chat template and tokenizer (native preprocessing): vLLM's POST
// /tokenize with messages. The engine's 4xx is an error wrapping
// backend.ErrInvalidArgument with its message. SGLang's and llama.cpp's
// tokenize endpoints take text only, so they are refused.
func (e *Engine) TokenizeChat(ctx context.Context, req *backend.TokenizeRequest) ([]uint32, error) {
	info, ok := e.startedInfo()
	if !ok {
		return nil, fmt.Errorf("%w: %w", backend.ErrEngineShutdown, ErrNotStarted)
	}
	if e.cfg.Dialect != DialectVLLM {
		return nil, refuse(e.cfg.Dialect, "chat tokenization (its tokenize endpoint takes text, not messages): use frontend preprocessing")
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("bridge: %w: tokenize: no messages", backend.ErrInvalidArgument)
	}
	body := vllmTokenizeChat{
		Model:                info.served,
		Messages:             req.Messages,
		Tools:                req.Tools,
		AddGenerationPrompt:  req.AddGenerationPrompt,
		ContinueFinalMessage: req.ContinueFinalMessage,
		ChatTemplateKwargs:   req.ChatTemplateKwargs,
	}
	resp, err := e.post(ctx, "/tokenize", body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("bridge: %w: the vllm engine's /tokenize answer: %v", backend.ErrUnknown, err)
	}
	return out.Tokens, nil
}
