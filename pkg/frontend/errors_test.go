package frontend

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// TestErrorsReachTheOpenAISDK checks that the official SDK, which reads
// only the nested {"error":{...}} form, gets the message, type, param and
// code of a refused request into its *openai.Error, unary and streamed.
func TestErrorsReachTheOpenAISDK(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	c := s.sdk("sk-any")

	hot := chatParams()
	hot.Temperature = openai.Float(5)
	negative := chatParams()
	negative.MaxCompletionTokens = openai.Int(-1)
	unknown := chatParams()
	unknown.Model = "nope"
	cases := []struct {
		name   string
		params openai.ChatCompletionNewParams
		status int
		typ    string
		param  string
		phrase string
	}{
		{"temperature out of range", hot, 400, "invalid_request_error", "temperature", "temperature must be between 0 and 2"},
		{"negative max_completion_tokens", negative, 400, "invalid_request_error", "max_completion_tokens", "max_completion_tokens must be at least 1"},
		{"unknown model", unknown, 404, "not_found_error", "", "Model not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, err error) {
				t.Helper()
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("%s: err %v (%T), want an *openai.Error", how, err, err)
				}
				if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Param != tc.param ||
					apiErr.Code != strconv.Itoa(tc.status) || !strings.Contains(apiErr.Message, tc.phrase) {
					t.Errorf("%s: status %d, type %q, param %q, code %q, message %q; want %d, %q, %q, %q, a message with %q",
						how, apiErr.StatusCode, apiErr.Type, apiErr.Param, apiErr.Code, apiErr.Message,
						tc.status, tc.typ, tc.param, strconv.Itoa(tc.status), tc.phrase)
				}
			}
			_, err := c.Chat.Completions.New(t.Context(), tc.params)
			check("unary", err)
			stream := c.Chat.Completions.NewStreaming(t.Context(), tc.params)
			for stream.Next() {
				t.Errorf("a chunk of a refused request: %s", stream.Current().RawJSON())
			}
			check("streamed", stream.Err())
			_ = stream.Close()
		})
	}
}
