package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// BaselineOptions shape the baseline server's streams.
type BaselineOptions struct {
	// TTFT is the delay before the first chunk (0 = none).
	TTFT time.Duration
	// ITL is the delay between successive tokens (0 = as fast as the
	// connection takes them).
	ITL time.Duration
	// DefaultMaxTokens is the token count of requests without max_tokens
	// (0 = 16).
	DefaultMaxTokens int
	// Token is the text of every token (empty = " tok").
	Token string
}

// BaselineHandler returns a bare net/http handler for POST
// /v1/chat/completions and POST /v1/completions that decodes the request
// with encoding/json and streams max_tokens tokens in the chunk shapes
// the serving stack uses: a role chunk (chat), one chunk per token, a
// finish chunk (finish_reason "length"), a usage chunk when
// stream_options.include_usage is set, and "data: [DONE]". Each chunk is
// flushed on its own. Prompt tokens are counted as whitespace-separated
// words. Non-streamed requests get the unary response. GET /health
// answers 200.
//
// A run against it measures the load generator and HTTP alone; the
// difference to a run against the stack is the stack's overhead.
func BaselineHandler(opts BaselineOptions) http.Handler {
	if opts.DefaultMaxTokens <= 0 {
		opts.DefaultMaxTokens = 16
	}
	if opts.Token == "" {
		opts.Token = " tok"
	}
	b := &baseline{opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", b.chat)
	mux.HandleFunc("POST /v1/completions", b.completions)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

type baseline struct {
	opts BaselineOptions
	ids  atomic.Uint64
}

// stream is the shape of one request's response.
type stream struct {
	id      string
	model   string
	created int64
	tokens  int
	usage   openai.Usage
	withUse bool
}

func (b *baseline) newStream(model string, maxTokens *int64, prompt int, includeUsage bool, prefix string) stream {
	n := b.opts.DefaultMaxTokens
	if maxTokens != nil && *maxTokens > 0 {
		n = int(*maxTokens)
	}
	return stream{
		id:      prefix + strconv.FormatUint(b.ids.Add(1), 10),
		model:   model,
		created: time.Now().Unix(),
		tokens:  n,
		usage:   openai.Usage{PromptTokens: prompt, CompletionTokens: n, TotalTokens: prompt + n},
		withUse: includeUsage,
	}
}

func (b *baseline) chat(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return
	}
	prompt := 0
	for _, m := range req.Messages {
		if m.Content.Text != nil {
			prompt += len(strings.Fields(*m.Content.Text))
		}
	}
	s := b.newStream(req.Model, req.MaxTokensLimit(), prompt, req.IncludeUsage(), "chatcmpl-")
	if !req.Stream {
		text := strings.Repeat(b.opts.Token, s.tokens)
		if b.wait(r.Context(), b.opts.TTFT+time.Duration(s.tokens-1)*b.opts.ITL) != nil {
			return
		}
		writeJSON(w, &openai.ChatCompletion{
			ID: s.id, Object: openai.ObjectChatCompletion, Created: s.created, Model: s.model,
			Choices: []openai.ChatChoice{{Message: openai.ChatMessage{Role: "assistant", Content: &text}, FinishReason: ptr(openai.FinishLength)}},
			Usage:   &s.usage,
		})
		return
	}
	chunk := func(d openai.ChatDelta, finish *string) *openai.ChatCompletionChunk {
		return &openai.ChatCompletionChunk{
			ID: s.id, Object: openai.ObjectChatCompletionChunk, Created: s.created, Model: s.model,
			Choices: []openai.ChatChunkChoice{{Delta: d, FinishReason: finish}},
		}
	}
	empty := ""
	b.serve(w, r, s,
		func() any { return chunk(openai.ChatDelta{Role: "assistant", Content: &empty}, nil) },
		func() any { return chunk(openai.ChatDelta{Content: &b.opts.Token}, nil) },
		func() any { return chunk(openai.ChatDelta{}, ptr(openai.FinishLength)) },
		func() any {
			return &openai.ChatCompletionChunk{
				ID: s.id, Object: openai.ObjectChatCompletionChunk, Created: s.created, Model: s.model,
				Choices: []openai.ChatChunkChoice{}, Usage: &s.usage,
			}
		})
}

func (b *baseline) completions(w http.ResponseWriter, r *http.Request) {
	var req openai.CompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return
	}
	prompt := 0
	switch {
	case req.Prompt.Text != nil:
		prompt = len(strings.Fields(*req.Prompt.Text))
	case req.Prompt.Tokens != nil:
		prompt = len(req.Prompt.Tokens)
	}
	s := b.newStream(req.Model, req.MaxTokens, prompt, req.IncludeUsage(), "cmpl-")
	chunk := func(text string, finish *string) *openai.Completion {
		return &openai.Completion{
			ID: s.id, Object: openai.ObjectTextCompletion, Created: s.created, Model: s.model,
			Choices: []openai.CompletionChoice{{Text: text, FinishReason: finish}},
		}
	}
	if !req.Stream {
		if b.wait(r.Context(), b.opts.TTFT+time.Duration(s.tokens-1)*b.opts.ITL) != nil {
			return
		}
		c := chunk(strings.Repeat(b.opts.Token, s.tokens), ptr(openai.FinishLength))
		c.Usage = &s.usage
		writeJSON(w, c)
		return
	}
	b.serve(w, r, s, nil,
		func() any { return chunk(b.opts.Token, nil) },
		func() any { return chunk("", ptr(openai.FinishLength)) },
		func() any {
			return &openai.Completion{
				ID: s.id, Object: openai.ObjectTextCompletion, Created: s.created, Model: s.model,
				Choices: []openai.CompletionChoice{}, Usage: &s.usage,
			}
		})
}

// serve streams s: role (when not nil) and the first token after TTFT,
// further tokens ITL apart, then the finish chunk, the usage chunk when
// asked for, and [DONE]. Chunk builders run per chunk, as a server
// building each chunk would.
func (b *baseline) serve(w http.ResponseWriter, r *http.Request, s stream, role, token, finish, usage func() any) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	if b.wait(ctx, b.opts.TTFT) != nil {
		return
	}
	send := func(v any) bool {
		if err := openai.WriteSSE(w, "", v); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if role != nil && !send(role()) {
		return
	}
	for i := range s.tokens {
		if i > 0 && b.wait(ctx, b.opts.ITL) != nil {
			return
		}
		if !send(token()) {
			return
		}
	}
	if !send(finish()) {
		return
	}
	if s.withUse && !send(usage()) {
		return
	}
	if _, err := w.Write([]byte(openai.SSEDone)); err == nil {
		_ = rc.Flush()
	}
}

// wait sleeps for d unless ctx ends first.
func (b *baseline) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("loadgen: baseline: %w", context.Cause(ctx))
	case <-t.C:
		return nil
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(openai.NewErrorBody(status, msg, ""))
}

func ptr[T any](v T) *T { return &v }
