package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// llamaTokenize is the body of llama-server's POST /tokenize.
type llamaTokenize struct {
	Content      string `json:"content"`
	AddSpecial   bool   `json:"add_special"`
	ParseSpecial bool   `json:"parse_special"`
}

// llamaApplyTemplate is the body of llama-server's POST /apply-template:
// the chat request's fields that shape the prompt.
type llamaApplyTemplate struct {
	Messages             json.RawMessage `json:"messages"`
	Tools                json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt  bool            `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message,omitempty"`
	ChatTemplateKwargs   json.RawMessage `json:"chat_template_kwargs,omitempty"`
}

// llamaTokenizeChat renders the conversation with the GGUF's chat
// template (POST /apply-template) and tokenizes the prompt as
// llama-server's own chat endpoint does: the tokenizer's special tokens
// added (its BOS, which the rendering leaves out) and special tokens in
// the text parsed.
func (e *Engine) llamaTokenizeChat(ctx context.Context, req *backend.TokenizeRequest) ([]uint32, error) {
	resp, err := e.post(ctx, "/apply-template", llamaApplyTemplate{
		Messages:             req.Messages,
		Tools:                req.Tools,
		AddGenerationPrompt:  req.AddGenerationPrompt,
		ContinueFinalMessage: req.ContinueFinalMessage,
		ChatTemplateKwargs:   req.ChatTemplateKwargs,
	}, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Prompt *string `json:"prompt"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil || out.Prompt == nil {
		return nil, fmt.Errorf("bridge: %w: the llamacpp engine's /apply-template answer has no prompt (%v)", backend.ErrUnknown, err)
	}
	return e.postTokens(ctx, "/tokenize", llamaTokenize{Content: *out.Prompt, AddSpecial: true, ParseSpecial: true})
}

// llamaProps are the fields of llama-server's GET /props the bridge reads.
type llamaProps struct {
	ModelPath                 string `json:"model_path"`
	ModelAlias                string `json:"model_alias"`
	ChatTemplate              string `json:"chat_template"`
	BOSToken                  string `json:"bos_token"`
	EOSToken                  string `json:"eos_token"`
	DefaultGenerationSettings struct {
		NCtx int `json:"n_ctx"`
	} `json:"default_generation_settings"`
}

// nativeModel is what llama-server says of its model for a card without
// the model's files: /props' template and special tokens, the EOS token's
// id (its string tokenized), the vocabulary size from /v1/models.
func (e *Engine) llamaNativeModel(ctx context.Context, p llamaProps, nVocab int) (*backend.NativeModel, error) {
	m := &backend.NativeModel{ChatTemplate: p.ChatTemplate, BOSToken: p.BOSToken, EOSToken: p.EOSToken, VocabSize: nVocab}
	if p.EOSToken != "" {
		ids, err := e.postTokens(ctx, "/tokenize", llamaTokenize{Content: p.EOSToken, ParseSpecial: true})
		if err != nil {
			return nil, fmt.Errorf("tokenize the EOS token %q: %w", p.EOSToken, err)
		}
		if len(ids) == 1 {
			m.EOSTokenIDs = ids
		}
	}
	return m, nil
}
