package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

var _ backend.ChatTokenizer = (*Engine)(nil)

// errNoTokenizeEndpoint is tokenizeText's error for a dialect whose
// engine has no endpoint that tokenizes text.
var errNoTokenizeEndpoint = errors.New("bridge: the engine has no text tokenize endpoint")

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

// vllmTokenizeText is the body of vLLM's POST /tokenize for a text
// (TokenizeCompletionRequest).
type vllmTokenizeText struct {
	Model            string `json:"model,omitempty"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

// TokenizeChat renders and tokenizes a conversation with the engine's own
// chat template and tokenizer (native preprocessing), or tokenizes
// req.Prompt with its tokenizer: vLLM's POST /tokenize (messages or
// prompt); llama.cpp's POST /apply-template (the GGUF's template) then
// POST /tokenize, as its own chat endpoint does. The engine's 4xx is an
// error wrapping backend.ErrInvalidArgument with its message. SGLang's
// tokenize endpoint takes text only and is not used: refused.
func (e *Engine) TokenizeChat(ctx context.Context, req *backend.TokenizeRequest) ([]uint32, error) {
	info, ok := e.startedInfo()
	if !ok {
		return nil, fmt.Errorf("%w: %w", backend.ErrEngineShutdown, ErrNotStarted)
	}
	if e.cfg.Dialect == DialectSGLang {
		return nil, refuse(e.cfg.Dialect, "chat tokenization (its tokenize endpoint takes text, not messages): use frontend preprocessing")
	}
	if req.Prompt != nil {
		return e.tokenizeText(ctx, info, *req.Prompt, req.AddSpecialTokens)
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("bridge: %w: tokenize: no messages", backend.ErrInvalidArgument)
	}
	if e.cfg.Dialect == DialectLlamaCpp {
		return e.llamaTokenizeChat(ctx, req)
	}
	body := vllmTokenizeChat{
		Model:                info.served,
		Messages:             req.Messages,
		Tools:                req.Tools,
		AddGenerationPrompt:  req.AddGenerationPrompt,
		ContinueFinalMessage: req.ContinueFinalMessage,
		ChatTemplateKwargs:   req.ChatTemplateKwargs,
	}
	return e.postTokens(ctx, "/tokenize", body)
}

// tokenizeText tokenizes text with the engine's tokenizer, special tokens
// written in it parsed as such; addSpecial adds the tokens the tokenizer
// adds to a text (BOS). errNoTokenizeEndpoint for SGLang.
func (e *Engine) tokenizeText(ctx context.Context, info engineInfo, text string, addSpecial bool) ([]uint32, error) {
	switch e.cfg.Dialect {
	case DialectLlamaCpp:
		return e.postTokens(ctx, "/tokenize", llamaTokenize{Content: text, AddSpecial: addSpecial, ParseSpecial: true})
	case DialectVLLM:
		return e.postTokens(ctx, "/tokenize", vllmTokenizeText{Model: info.served, Prompt: text, AddSpecialTokens: addSpecial})
	}
	return nil, errNoTokenizeEndpoint
}

// postTokens posts body to path and reads the {"tokens": [...]} answer.
func (e *Engine) postTokens(ctx context.Context, path string, body any) ([]uint32, error) {
	resp, err := e.post(ctx, path, body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("bridge: %w: the %s engine's %s answer: %v", backend.ErrUnknown, e.cfg.Dialect, path, err)
	}
	if out.Tokens == nil {
		out.Tokens = []uint32{}
	}
	return out.Tokens, nil
}
