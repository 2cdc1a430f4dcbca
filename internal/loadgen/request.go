package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// outcome is what one request produced.
type outcome struct {
	start, end time.Time
	// ttft is set when content arrived (hasContent).
	ttft       time.Duration
	hasContent bool
	// itl holds the gaps between successive content-bearing chunks.
	itl          []time.Duration
	contentCount int
	usage        *openai.Usage
	err          *RequestError
	// refused is set for a refusal: an answer of 429, 503 or 529, or any
	// other error status with Retry-After (err is set too).
	refused bool
	// retryAfter is the refusal's Retry-After (0: none given).
	retryAfter time.Duration
	// cancelled is a request cut short because the run was interrupted.
	cancelled bool
}

// requester sends one streamed request and measures it.
type requester struct {
	client   *http.Client
	endpoint string
	api      API
	model    string
	osl      int64
	timeout  time.Duration
	headers  map[string]string
}

// body returns the JSON request for p: streamed with usage, max_tokens =
// OSL and ignore_eos so exactly OSL tokens are generated.
func (q *requester) body(p Prompt) ([]byte, error) {
	yes := true
	ext := openai.CommonExt{IgnoreEOS: &yes}
	opts := &openai.StreamOptions{IncludeUsage: true}
	var req any
	if q.api == APICompletions {
		req = &openai.CompletionRequest{
			Model: q.model, Prompt: openai.Prompt{Text: &p.Text}, MaxTokens: &q.osl,
			Stream: true, StreamOptions: opts, CommonExt: ext,
		}
	} else {
		req = &openai.ChatCompletionRequest{
			Model:     q.model,
			Messages:  []openai.Message{{Role: "user", Content: openai.Content{Text: &p.Text}}},
			MaxTokens: &q.osl, Stream: true, StreamOptions: opts, CommonExt: ext,
		}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("loadgen: encode request: %w", err)
	}
	return b, nil
}

// do sends body and reads the stream to its end. runCtx is the run's
// context: a request it cancels is marked cancelled, not failed.
func (q *requester) do(runCtx context.Context, body []byte) outcome {
	ctx, cancel := context.WithTimeout(runCtx, q.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.endpoint, bytes.NewReader(body))
	if err != nil {
		return outcome{err: &RequestError{Kind: KindTransport, Err: err}}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range q.headers {
		req.Header.Set(k, v)
	}

	o := outcome{start: time.Now()}
	resp, err := q.client.Do(req)
	if err != nil {
		return q.fail(runCtx, o, transportError(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		o.retryAfter, o.refused = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		o.refused = o.refused || refusalStatus(resp.StatusCode)
		o.end = time.Now()
		return q.fail(runCtx, o, &RequestError{Kind: KindHTTP, Status: resp.StatusCode, Err: errors.New(errorMessage(resp.Body))})
	}
	sr := newSSEReader(resp.Body)
	last := o.start
	for {
		name, data, err := sr.next()
		now := time.Now()
		switch {
		case errors.Is(err, errNoDone):
			return q.fail(runCtx, o, &RequestError{Kind: KindProtocol, Err: err})
		case err != nil:
			return q.fail(runCtx, o, transportError(ctx, err))
		case name == "error":
			return q.fail(runCtx, o, &RequestError{Kind: KindSSE, Err: errors.New(errorText(data))})
		case name != "":
			continue // annotations such as formatted_prompt
		case bytes.Equal(data, []byte("[DONE]")):
			o.end = now
			_, _ = io.Copy(io.Discard, sr.br) // let the connection be reused
			return o
		}
		if d := bytes.TrimSpace(data); bytes.HasPrefix(d, []byte(`{"error"`)) {
			return q.fail(runCtx, o, &RequestError{Kind: KindSSE, Err: errors.New(errorText(d))})
		}
		content, usage, err := q.parse(data)
		if err != nil {
			return q.fail(runCtx, o, &RequestError{Kind: KindProtocol, Err: err})
		}
		if usage != nil {
			o.usage = usage
		}
		if !content {
			continue
		}
		if o.hasContent {
			o.itl = append(o.itl, now.Sub(last))
		} else {
			o.hasContent = true
			o.ttft = now.Sub(o.start)
		}
		o.contentCount++
		last = now
	}
}

// fail ends o with err, or marks it cancelled when the run was
// interrupted.
func (q *requester) fail(runCtx context.Context, o outcome, err *RequestError) outcome {
	if runCtx.Err() != nil {
		o.cancelled = true
		return o
	}
	o.err = err
	return o
}

// parse decodes one chunk and reports whether it carries generated text
// (content or reasoning_content for chat, text for completions) and its
// usage, if any.
func (q *requester) parse(data []byte) (bool, *openai.Usage, error) {
	if q.api == APICompletions {
		var c openai.Completion
		if err := json.Unmarshal(data, &c); err != nil {
			return false, nil, fmt.Errorf("loadgen: decode chunk: %w", err)
		}
		for _, ch := range c.Choices {
			if ch.Text != "" {
				return true, c.Usage, nil
			}
		}
		return false, c.Usage, nil
	}
	var c openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return false, nil, fmt.Errorf("loadgen: decode chunk: %w", err)
	}
	for _, ch := range c.Choices {
		if (ch.Delta.Content != nil && *ch.Delta.Content != "") ||
			(ch.Delta.ReasoningContent != nil && *ch.Delta.ReasoningContent != "") {
			return true, c.Usage, nil
		}
	}
	return false, c.Usage, nil
}

// errorMessage reads the start of an error response and returns its
// message: error.message or message from a JSON body, else the text.
func errorMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	return errorText(b)
}

// errorText extracts the message of an error body in any form
// (openai.DecodeErrorBody: nested, flat or {"error":"..."}), falling back
// to the raw text.
func errorText(b []byte) string {
	if e, ok := openai.DecodeErrorBody(b); ok {
		return e.Message
	}
	return strings.TrimSpace(string(b))
}

// refusalStatus reports the statuses of a server that refuses work it has
// no room for: 429 (too many requests), 503 (unavailable) and 529
// (overloaded).
func refusalStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == 529
}

// retryAfter reads a Retry-After header: whole seconds or an HTTP date
// (relative to now). ok is false when the header is absent or does not
// parse.
func retryAfter(h string, now time.Time) (d time.Duration, ok bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(h); err == nil {
		return time.Duration(max(0, secs)) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}
