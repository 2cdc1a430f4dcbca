package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponses serves the Responses API from a frontend and a mocker and
// reads it with the official SDK's Responses client: a unary answer, the
// same streamed, instructions and input items that reach the prompt, and
// the refusal of previous_response_id.
func TestResponses(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	c.startMocker("mocker", deterministic)
	f := c.startFrontend()
	f.waitModels(t, "demo")
	ctx := t.Context()
	const maxTokens = 12
	params := responses.ResponseNewParams{
		Model:           "demo",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the capital of France?")},
		MaxOutputTokens: openai.Int(maxTokens),
	}

	t.Run("unary", func(t *testing.T) {
		r, err := f.sdk.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r.ID, "resp_") || r.Model != "demo" || r.OutputText() == "" {
			t.Errorf("response %s", r.RawJSON())
		}
		// The mocker answers until max_output_tokens.
		if r.Status != responses.ResponseStatusIncomplete || r.IncompleteDetails.Reason != "max_output_tokens" {
			t.Errorf("status %q, incomplete_details %q: want incomplete for max_output_tokens", r.Status, r.IncompleteDetails.Reason)
		}
		if len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].AsMessage().Content[0].Type != "output_text" {
			t.Errorf("output %s, want one message of output_text", r.RawJSON())
		}
		if u := r.Usage; u.OutputTokens != maxTokens || u.InputTokens == 0 || u.TotalTokens != u.InputTokens+maxTokens {
			t.Errorf("usage %+v", u)
		}
		if r.MaxOutputTokens != maxTokens || r.Temperature != 1 || r.ToolChoice.OfToolChoiceMode != "auto" {
			t.Errorf("echoed settings: max_output_tokens %d, temperature %v, tool_choice %s", r.MaxOutputTokens, r.Temperature, r.ToolChoice.RawJSON())
		}
	})

	t.Run("streamed", func(t *testing.T) {
		unary, err := f.sdk.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		stream := f.sdk.Responses.NewStreaming(ctx, params)
		defer stream.Close()
		var (
			text  strings.Builder
			types []string
			final *responses.Response
		)
		for stream.Next() {
			ev := stream.Current()
			if int(ev.SequenceNumber) != len(types) {
				t.Errorf("event %d (%s): sequence_number %d", len(types), ev.Type, ev.SequenceNumber)
			}
			types = append(types, ev.Type)
			switch ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.AsResponseOutputTextDelta().Delta)
			case "response.completed", "response.incomplete":
				r := ev.Response
				final = &r
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(types) < 2 || types[0] != "response.created" || types[1] != "response.in_progress" || final == nil {
			t.Fatalf("events %v: want response.created, response.in_progress, ..., a terminal event", types)
		}
		if types[len(types)-1] != "response.incomplete" || final.Status != responses.ResponseStatusIncomplete {
			t.Errorf("last event %s, status %s: want response.incomplete", types[len(types)-1], final.Status)
		}
		if text.String() != final.OutputText() || final.OutputText() != unary.OutputText() {
			t.Errorf("deltas %q, final %q, unary %q: want one text", text.String(), final.OutputText(), unary.OutputText())
		}
		if final.Usage.OutputTokens != maxTokens || final.Usage.InputTokens != unary.Usage.InputTokens {
			t.Errorf("streamed usage %+v, unary %+v", final.Usage, unary.Usage)
		}
	})

	// Instructions and input items reach the prompt: it grows.
	t.Run("instructions and input items", func(t *testing.T) {
		plain, err := f.sdk.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		p := params
		p.Instructions = openai.String("You are a geography teacher. Answer in one word.")
		withInstr, err := f.sdk.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if withInstr.Usage.InputTokens <= plain.Usage.InputTokens || withInstr.Instructions.OfString != p.Instructions.Value {
			t.Errorf("with instructions: %d input tokens (echoed %q), without: %d", withInstr.Usage.InputTokens, withInstr.Instructions.OfString, plain.Usage.InputTokens)
		}

		output := responses.ResponseInputItemParamOfFunctionCallOutput("sunny, 24 C")
		output.OfFunctionCallOutput.CallID = openai.String("call_1")
		p = params
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Answer briefly.", responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(`{"city":"Paris"}`, "call_1", "weather"),
			output,
		}}
		p.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name:       "weather",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		}}}
		items, err := f.sdk.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if items.OutputText() == "" || items.Usage.InputTokens <= plain.Usage.InputTokens {
			t.Errorf("input items: %q with %d input tokens (a string input has %d)", items.OutputText(), items.Usage.InputTokens, plain.Usage.InputTokens)
		}
		if len(items.Tools) != 1 || items.Tools[0].Name != "weather" {
			t.Errorf("tools echoed as %s", items.RawJSON())
		}
	})

	// A conversation continues from a stored response
	// (responses_stored_test.go); an unknown one is a 404 naming it.
	t.Run("previous_response_id", func(t *testing.T) {
		p := params
		p.PreviousResponseID = openai.String("resp_123")
		_, err := f.sdk.Responses.New(ctx, p)
		apiErr := (*openai.Error)(nil)
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.Message, "resp_123") || apiErr.Param != "previous_response_id" {
			t.Fatalf("err %v, want an *openai.Error, 404, naming resp_123, param previous_response_id", err)
		}
	})
}
