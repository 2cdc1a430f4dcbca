package preprocessor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// fakeEngineTokenizer records the requests and answers with ids or err.
type fakeEngineTokenizer struct {
	got []*backend.TokenizeRequest
	ids []uint32
	err error
}

func (f *fakeEngineTokenizer) TokenizeChat(_ context.Context, req *backend.TokenizeRequest) ([]uint32, error) {
	f.got = append(f.got, req)
	return f.ids, f.err
}

// nativeModel is the demo model with a card that says preprocessing
// "engine".
func nativeModel(t *testing.T, tok backend.ChatTokenizer) (*Model, error) {
	t.Helper()
	card := *demoModel(t).Card()
	card.RuntimeConfig.Preprocessing = modelcard.ProcessingEngine
	return NewModel(&card, Options{EngineTokenizer: tok})
}

func nativeChat(t *testing.T, body string) *openai.ChatCompletionRequest {
	t.Helper()
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// With engine preprocessing the prompt is the engine's tokens: the
// frontend sends the messages as the client wrote them, tools unless
// tool_choice is "none", the generation-prompt flag and the template
// arguments, and renders nothing itself.
func TestEnginePreprocessingUsesTheEnginesTokens(t *testing.T) {
	fake := &fakeEngineTokenizer{ids: []uint32{7, 8, 9}}
	m, err := nativeModel(t, fake)
	if err != nil {
		t.Fatal(err)
	}
	msgs := `[{"role":"user","content":"hi","name":"x"}]`
	tools := `[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	for _, tc := range []struct {
		body      string
		wantTools bool
		wantGen   bool
	}{
		{`{"model":"demo","messages":` + msgs + `,"tools":` + tools + `,"chat_template_kwargs":{"enable_thinking":false}}`, true, true},
		{`{"model":"demo","messages":` + msgs + `,"tools":` + tools + `,"tool_choice":"none","add_generation_prompt":false}`, false, false},
	} {
		p, err := m.PrepareChat(nativeChat(t, tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(p.Request.TokenIDs) != "[7 8 9]" || p.Prompt != "" {
			t.Errorf("prompt ids %v text %q; want the engine's [7 8 9] and no rendered text", p.Request.TokenIDs, p.Prompt)
		}
		got := fake.got[len(fake.got)-1]
		if string(got.Messages) != msgs || got.Model != "demo" || got.AddGenerationPrompt != tc.wantGen || (len(got.Tools) > 0) != tc.wantTools {
			t.Errorf("%s: tokenize request %+v", tc.body, got)
		}
		if tc.wantTools && string(got.ChatTemplateKwargs) != `{"enable_thinking":false}` {
			t.Errorf("chat_template_kwargs %s", got.ChatTemplateKwargs)
		}
	}
}

// The engine refusing the conversation is a 400 with its message; other
// failures pass through; an empty prompt is refused as usual.
func TestEnginePreprocessingErrors(t *testing.T) {
	req := `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`
	refused := &fakeEngineTokenizer{err: fmt.Errorf("%w: roles must alternate", backend.ErrInvalidArgument)}
	m, _ := nativeModel(t, refused)
	_, err := m.PrepareChat(nativeChat(t, req))
	var ve *openai.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Message, "roles must alternate") {
		t.Errorf("refused: %v; want a validation error with the engine's message", err)
	}
	down := &fakeEngineTokenizer{err: backend.ErrCannotConnect}
	m, _ = nativeModel(t, down)
	if _, err := m.PrepareChat(nativeChat(t, req)); !errors.Is(err, backend.ErrCannotConnect) || errors.As(err, &ve) {
		t.Errorf("unreachable: %v; want ErrCannotConnect, not a validation error", err)
	}
	m, _ = nativeModel(t, &fakeEngineTokenizer{})
	if _, err := m.PrepareChat(nativeChat(t, req)); !errors.As(err, &ve) {
		t.Errorf("empty engine prompt: %v; want a validation error", err)
	}
	if _, err := nativeModel(t, nil); !errors.Is(err, ErrNoEngineTokenizer) {
		t.Errorf("no engine tokenizer: %v", err)
	}
}
