package preprocessor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// byteTokenizer is an engine tokenizer for a model without tokenizer on
// its card: a conversation is [1 2 3 4], a text one id per byte (its byte
// value + 100), after a BOS (1) when special tokens are asked for. It
// records the requests.
type byteTokenizer struct {
	mu  sync.Mutex
	got []*backend.TokenizeRequest
}

func (b *byteTokenizer) TokenizeChat(_ context.Context, req *backend.TokenizeRequest) ([]uint32, error) {
	b.mu.Lock()
	b.got = append(b.got, req)
	b.mu.Unlock()
	if req.Prompt == nil {
		return []uint32{1, 2, 3, 4}, nil
	}
	if strings.Contains(*req.Prompt, "<bad>") {
		return nil, fmt.Errorf("%w: the prompt holds <bad>", backend.ErrInvalidArgument)
	}
	var ids []uint32
	if req.AddSpecialTokens {
		ids = append(ids, 1)
	}
	for i := range len(*req.Prompt) {
		ids = append(ids, uint32((*req.Prompt)[i])+100)
	}
	return ids, nil
}

func (b *byteTokenizer) requests() []*backend.TokenizeRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*backend.TokenizeRequest(nil), b.got...)
}

// engineOnlyModel is a model whose card the engine built (no tokenizer),
// as the frontend gets it: through Marshal and Unmarshal.
func engineOnlyModel(t *testing.T, tok backend.ChatTokenizer, vocab int) *Model {
	t.Helper()
	card, err := modelcard.FromEngine(modelcard.EngineModel{ChatTemplate: "{{ messages }}", EOSToken: "</s>", EOSTokenIDs: []uint32{2}, VocabSize: vocab},
		modelcard.Options{Name: "gguf", ContextLength: 512, Runtime: modelcard.RuntimeConfig{Preprocessing: modelcard.ProcessingEngine, Postprocessing: modelcard.ProcessingEngine}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := card.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if card, err = modelcard.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(card, Options{EngineTokenizer: tok, Clock: func() time.Time { return frozen }})
	if err != nil {
		t.Fatal(err)
	}
	if m.Tokenizer() != nil || !m.HasChatTemplate() {
		t.Fatalf("tokenizer %v, chat %v: want none, and chat through the engine", m.Tokenizer(), m.HasChatTemplate())
	}
	return m
}

// engineOwnText streams the engine's own text: "Hel" "lo" " there", then
// the EOS id without text, as an engine that postprocesses does.
func engineOwnText(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	for _, p := range []struct {
		id   uint32
		text string
	}{{11, "Hel"}, {12, "lo"}, {13, " there"}} {
		if err := emit(&backend.Output{TokenIDs: []uint32{p.id}, Text: &p.text}); err != nil {
			return err
		}
	}
	if err := emit(backend.Tokens(2)); err != nil {
		return err
	}
	return emit(backend.EOS().WithUsage(len(req.TokenIDs), 4))
}

func completionReq(t *testing.T, body string) *openai.CompletionRequest {
	t.Helper()
	var req openai.CompletionRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// Without a tokenizer, chat prompts and text prompts are the engine's
// tokens (a text with the special tokens the frontend's own encode would
// add), token-id prompts pass as they are, and the answer is the engine's
// text with usage from its token ids.
func TestModelWithoutTokenizerServesTheEnginesTokensAndText(t *testing.T) {
	tok := &byteTokenizer{}
	m := engineOnlyModel(t, tok, 0)
	next := backend.GeneratorFunc(engineOwnText)
	ctx := context.Background()

	chat, err := m.ChatUnary(ctx, "c1", nativeChat(t, `{"model":"gguf","messages":[{"role":"user","content":"hi"}]}`), next)
	if err != nil {
		t.Fatal(err)
	}
	if got := *chat.Choices[0].Message.Content; got != "Hello there" || chat.Usage.PromptTokens != 4 || chat.Usage.CompletionTokens != 4 {
		t.Errorf("chat: %q, usage %+v; want the engine's text, 4 prompt tokens, 4 completion tokens", got, chat.Usage)
	}
	if r := tok.requests()[0]; r.Prompt != nil || string(r.Messages) != `[{"role":"user","content":"hi"}]` {
		t.Errorf("chat tokenize request %+v: want the conversation", r)
	}

	cmpl, err := m.CompleteUnary(ctx, "p1", completionReq(t, `{"model":"gguf","prompt":"abc","max_tokens":8}`), next)
	if err != nil {
		t.Fatal(err)
	}
	if cmpl.Choices[0].Text != "Hello there" || cmpl.Usage.PromptTokens != 4 || cmpl.Usage.CompletionTokens != 4 {
		t.Errorf("completion: %q, usage %+v; want the engine's text, BOS + 3 prompt tokens", cmpl.Choices[0].Text, cmpl.Usage)
	}
	r := tok.requests()[1]
	if r.Prompt == nil || *r.Prompt != "abc" || !r.AddSpecialTokens || r.Model != "gguf" || len(r.Messages) != 0 {
		t.Errorf("completions tokenize request %+v: want the text with special tokens", r)
	}

	preps, err := m.PrepareCompletion(completionReq(t, `{"model":"gguf","prompt":["a","b\u0000c"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(preps) != 2 || fmt.Sprint(preps[0].Request.TokenIDs) != "[1 197]" || fmt.Sprint(preps[1].Request.TokenIDs) != "[1 198 199]" {
		t.Errorf("batch prompts: %v; want each tokenized by the engine, NUL dropped", preps)
	}
	preps, err = m.PrepareCompletion(completionReq(t, `{"model":"gguf","prompt":[5,99999]}`))
	if err != nil || fmt.Sprint(preps[0].Request.TokenIDs) != "[5 99999]" {
		t.Errorf("token-id prompt: %v, %v; want the ids as they are (no vocabulary size known)", preps, err)
	}

	raw, err := m.PrepareChat(nativeChat(t, `{"model":"gguf","messages":[{"role":"user","content":"xy"}],"nvext":{"use_raw_prompt":true}}`))
	if err != nil || fmt.Sprint(raw.Request.TokenIDs) != "[220 221]" {
		t.Errorf("raw chat prompt: %v, %v; want the engine's tokens of the text, without special tokens", raw, err)
	}

	_, err = m.PrepareCompletion(completionReq(t, `{"model":"gguf","prompt":"a <bad> prompt"}`))
	var ve *openai.ValidationError
	if !errors.As(err, &ve) || ve.Param != "prompt" || !strings.Contains(ve.Message, "the prompt holds <bad>") {
		t.Errorf("refused prompt: %v; want a 400 on prompt with the engine's message", err)
	}

	// A vocabulary size the engine reported bounds token-id prompts.
	m = engineOnlyModel(t, tok, 1000)
	if _, err := m.PrepareCompletion(completionReq(t, `{"model":"gguf","prompt":[5,1000]}`)); !errors.As(err, &ve) || !strings.Contains(ve.Message, "1000 tokens") {
		t.Errorf("token id outside the engine's vocabulary: %v; want a 400", err)
	}
}

// What needs the model's tokenizer is refused with a 400 that names the
// feature and the fix, before the engine is asked anything.
func TestModelWithoutTokenizerRefusesWhatNeedsIt(t *testing.T) {
	tok := &byteTokenizer{}
	m := engineOnlyModel(t, tok, 0)
	const msg = "logprobs need the model's tokenizer: this model is served with the engine's own processing (no tokenizer on its card); serve it with --model-path DIR and frontend processing"
	for _, tc := range []struct {
		name, param, msg string
		call             func() error
	}{
		{"chat logprobs", "logprobs", msg, func() error {
			_, err := m.PrepareChat(nativeChat(t, `{"model":"gguf","messages":[{"role":"user","content":"hi"}],"logprobs":true}`))
			return err
		}},
		{"chat top_logprobs", "top_logprobs", msg, func() error {
			_, err := m.PrepareChat(nativeChat(t, `{"model":"gguf","messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`))
			return err
		}},
		{"completions logprobs", "logprobs", msg, func() error {
			_, err := m.PrepareCompletion(completionReq(t, `{"model":"gguf","prompt":"hi","logprobs":1}`))
			return err
		}},
		{"embeddings", "", strings.Replace(msg, "logprobs", "embeddings", 1), func() error {
			_, err := m.PrepareEmbedding(&openai.EmbeddingRequest{Model: "gguf", Input: openai.EmbeddingInput{Text: backend.Ptr("hi")}})
			return err
		}},
	} {
		err := tc.call()
		var ve *openai.ValidationError
		if !errors.Is(err, ErrNeedsTokenizer) || !errors.As(err, &ve) || ve.Param != tc.param || ve.Message != tc.msg {
			t.Errorf("%s: %v (param %q); want a validation error on %q saying %q", tc.name, err, paramOf(ve), tc.param, tc.msg)
		}
	}
	if n := len(tok.requests()); n != 0 {
		t.Errorf("the engine tokenized %d prompts of refused requests; want none", n)
	}
	if _, err := m.PrepareChat(nativeChat(t, `{"model":"gguf","messages":[{"role":"user","content":"hi"}],"logprobs":false}`)); err != nil {
		t.Errorf("logprobs false: %v", err)
	}
}

func paramOf(ve *openai.ValidationError) string {
	if ve == nil {
		return ""
	}
	return ve.Param
}

// An engine that should send its text but sends bare token ids ends the
// choice with an error that says so; it does not crash the frontend.
func TestModelWithoutTokenizerNeedsTheEnginesText(t *testing.T) {
	m := engineOnlyModel(t, &byteTokenizer{}, 0)
	next := backend.GeneratorFunc(func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
		if err := emit(backend.Tokens(11)); err != nil {
			return err
		}
		return emit(backend.Length())
	})
	_, err := m.ChatUnary(context.Background(), "c1", nativeChat(t, `{"model":"gguf","messages":[{"role":"user","content":"hi"}]}`), next)
	if !errors.Is(err, ErrNoDetokenizer) {
		t.Errorf("ids without text: %v; want ErrNoDetokenizer", err)
	}
	d := NewDecoder(nil, DecoderOptions{HiddenStopIDs: []uint32{2}})
	if delta, err := d.Step(backend.Tokens(2)); err != nil || delta.Finish == nil {
		t.Errorf("a stop id without text: %+v, %v; want the choice to end", delta, err)
	}
}

// A card without tokenizer needs the engine on both sides, and an engine
// tokenizer.
func TestNewModelWithoutTokenizer(t *testing.T) {
	card, err := modelcard.FromEngine(modelcard.EngineModel{}, modelcard.Options{Name: "gguf",
		Runtime: modelcard.RuntimeConfig{Preprocessing: modelcard.ProcessingEngine, Postprocessing: modelcard.ProcessingEngine}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewModel(card, Options{}); !errors.Is(err, ErrNoEngineTokenizer) {
		t.Errorf("no engine tokenizer: %v", err)
	}
	card.RuntimeConfig.Postprocessing = modelcard.ProcessingFrontend
	if _, err := NewModel(card, Options{EngineTokenizer: &byteTokenizer{}}); !errors.Is(err, modelcard.ErrMissingFile) {
		t.Errorf("frontend postprocessing without tokenizer: %v; want ErrMissingFile", err)
	}
}
