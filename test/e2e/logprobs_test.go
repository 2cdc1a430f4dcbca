package e2e

import (
	"math"
	"testing"

	"github.com/openai/openai-go/v3"
)

// testLogprobs asks the mocker's answers for logprobs through the
// official SDK, in the chat shape (logprobs, top_logprobs) and the legacy
// completions shape (logprobs: n), unary and streamed: every token has a
// logprob, its alternatives are a valid distribution headed by the token
// itself, and a seeded request gets the same numbers twice.
func testLogprobs(t *testing.T, f *frontend) {
	ctx := t.Context()
	const maxTokens, top = 8, 3
	params := openai.ChatCompletionNewParams{
		Model:       "demo",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Logprobs, please.")},
		MaxTokens:   openai.Int(maxTokens),
		Seed:        openai.Int(5),
		Logprobs:    openai.Bool(true),
		TopLogprobs: openai.Int(top),
	}
	c, err := f.sdk.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	content := c.Choices[0].Logprobs.Content
	if len(content) != maxTokens {
		t.Fatalf("chat: %d logprobs entries, want %d (one per token): %+v", len(content), maxTokens, c.Choices[0].Logprobs)
	}
	text := ""
	for i, e := range content {
		text += e.Token
		if len(e.TopLogprobs) != top || e.TopLogprobs[0].Token != e.Token || e.TopLogprobs[0].Logprob != e.Logprob {
			t.Errorf("chat token %d %q: top_logprobs %+v, want %d headed by the token", i, e.Token, e.TopLogprobs, top)
		}
		sum, prev := 0.0, 0.0
		for j, a := range e.TopLogprobs {
			if a.Logprob >= 0 || math.IsInf(a.Logprob, 0) || (j > 0 && a.Logprob > prev) {
				t.Errorf("chat token %d: alternative %d logprob %v (previous %v): want negative, finite, descending", i, j, a.Logprob, prev)
			}
			prev = a.Logprob
			sum += math.Exp(a.Logprob)
		}
		if sum >= 1 {
			t.Errorf("chat token %d: the top %d probabilities sum to %v", i, top, sum)
		}
	}
	if text != c.Choices[0].Message.Content {
		t.Errorf("chat: the logprobs' tokens spell %q, the answer is %q", text, c.Choices[0].Message.Content)
	}

	// Streamed, the same request gets the same numbers.
	stream := f.sdk.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var streamed []openai.ChatCompletionTokenLogprob
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			streamed = append(streamed, ch.Choices[0].Logprobs.Content...)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(streamed) != len(content) {
		t.Fatalf("streamed chat: %d logprobs entries, unary %d", len(streamed), len(content))
	}
	for i := range streamed {
		if streamed[i].Token != content[i].Token || streamed[i].Logprob != content[i].Logprob {
			t.Errorf("token %d: streamed %q %v, unary %q %v", i, streamed[i].Token, streamed[i].Logprob, content[i].Token, content[i].Logprob)
		}
	}

	comp, err := f.sdk.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "demo",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Logprobs, please.")},
		MaxTokens: openai.Int(maxTokens),
		Seed:      openai.Int(5),
		Logprobs:  openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := comp.Choices[0].Logprobs
	if len(lp.Tokens) != maxTokens || len(lp.TokenLogprobs) != maxTokens || len(lp.TopLogprobs) != maxTokens || len(lp.TextOffset) != maxTokens {
		t.Fatalf("completions logprobs: %d tokens, %d logprobs, %d top, %d offsets; want %d each", len(lp.Tokens), len(lp.TokenLogprobs), len(lp.TopLogprobs), len(lp.TextOffset), maxTokens)
	}
	for i, alts := range lp.TopLogprobs {
		if len(alts) != 2 || alts[lp.Tokens[i]] != lp.TokenLogprobs[i] || lp.TokenLogprobs[i] >= 0 {
			t.Errorf("completions token %d %q (%v): top_logprobs %v, want 2 including the token", i, lp.Tokens[i], lp.TokenLogprobs[i], alts)
		}
	}
}
