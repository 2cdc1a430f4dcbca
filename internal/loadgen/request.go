package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// outcome is what one request produced.
type outcome struct {
	start, end time.Time
	// connected is when the request got its connection (a new one
	// dialled, or one kept alive); zero if it got none.
	connected time.Time
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
	// retried is set when the request was sent a second time, on a new
	// connection, because the server had closed the reused connection
	// of the first attempt without answering (requester.send).
	retried bool
}

// requester sends one streamed request and measures it.
type requester struct {
	client *http.Client
	// fresh sends the one retry of a request the server never received,
	// on a new connection (oneShotClient); nil: no retries.
	fresh    *http.Client
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
	var req any
	if q.api == APICompletions {
		yes := true
		req = &openai.CompletionRequest{
			Model: q.model, Prompt: openai.Prompt{Text: &p.Text}, MaxTokens: &q.osl,
			Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true}, CommonExt: openai.CommonExt{IgnoreEOS: &yes},
		}
	} else {
		req = q.chatRequest([]openai.Message{{Role: "user", Content: openai.Content{Text: &p.Text}}})
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("loadgen: encode request: %w", err)
	}
	return b, nil
}

// chatRequest is the chat request of msgs: streamed with usage,
// max_tokens = OSL and ignore_eos.
func (q *requester) chatRequest(msgs []openai.Message) *openai.ChatCompletionRequest {
	yes := true
	return &openai.ChatCompletionRequest{
		Model: q.model, Messages: msgs, MaxTokens: &q.osl, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}, CommonExt: openai.CommonExt{IgnoreEOS: &yes},
	}
}

// do sends body and reads the stream to its end. runCtx is the run's
// context: a request it cancels is marked cancelled, not failed. A
// request that failed as one the server never received does (send) is
// sent once more, on a new connection; its times count from the first
// attempt, as the client saw them. When answer is not nil, the chat
// stream's content deltas are appended to it as received.
func (q *requester) do(runCtx context.Context, body []byte, answer *strings.Builder) outcome {
	ctx, cancel := context.WithTimeout(runCtx, q.timeout)
	defer cancel()

	o := outcome{start: time.Now()}
	var connected atomic.Int64
	resp, unreceived, err := q.send(ctx, q.client, body, &connected)
	if err != nil && unreceived && q.fresh != nil && ctx.Err() == nil {
		o.retried = true
		resp, _, err = q.send(ctx, q.fresh, body, &connected)
	}
	if ns := connected.Load(); ns != 0 {
		o.connected = time.Unix(0, ns)
	}
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
		c, err := q.parse(data)
		if err != nil {
			return q.fail(runCtx, o, &RequestError{Kind: KindProtocol, Err: err})
		}
		if c.usage != nil {
			o.usage = c.usage
		}
		if answer != nil {
			answer.WriteString(c.text)
		}
		if !c.generated {
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

// send posts body with client. When it fails, unreceived reports
// whether it failed as a request the server never received does: it
// went on a reused keep-alive connection and failed before any byte of
// a response came back, with an error of a connection the server had
// closed (neverReceived). That is the race of a server's keep-alive timeout
// (llama-server closes idle connections after a few seconds) with the
// client picking the connection from its pool for the next request;
// do then sends the request once more, on a new connection.
//
// Why this and not net/http's own retry: the transport re-sends a
// request by itself after such a failure only when it is idempotent
// (GET, HEAD, OPTIONS, TRACE, or any method with an Idempotency-Key or
// X-Idempotency-Key header, Request.isReplayable) with a body it can
// rewind (GetBody), or when not a byte of it was written. The header
// would make our POSTs retryable, but it goes to the server (which may
// act on it: gateways deduplicate by it), the transport retries on
// whatever pooled connection comes next (so once more for every other
// stale one in the pool) and nobody counts the retries.
// http.ErrSkipAltProtocol only lets a RoundTripper registered with
// RegisterProtocol decline a request; it is no retry mechanism. So the
// load generator retries itself: at most once, on a connection of its
// own, counted (Report.RetriedIdleConn). To keep every re-send ours,
// the request has no GetBody, so the transport never re-sends it
// itself; the cost is that a 307 or 308 redirect is not followed (the
// client returns it, an http_status failure), which a benchmark
// endpoint does not send.
//
// A server that read the request and then closed the connection
// without answering a byte looks the same from here and is retried too:
// over HTTP/1.1 the client cannot tell the two apart. A request that
// got any response byte (a status line, a partial stream) is never
// retried.
func (q *requester) send(ctx context.Context, client *http.Client, body []byte, connected *atomic.Int64) (resp *http.Response, unreceived bool, err error) {
	// The trace's callbacks run on the transport's goroutines.
	var reused, answered atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(c httptrace.GotConnInfo) {
			reused.Store(c.Reused)
			connected.Store(time.Now().UnixNano())
		},
		GotFirstResponseByte: func() { answered.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.GetBody = nil // see above: only do re-sends
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range q.headers {
		req.Header.Set(k, v)
	}
	resp, err = client.Do(req)
	if err != nil {
		return nil, reused.Load() && !answered.Load() && neverReceived(err), err
	}
	return resp, false, nil
}

// errServerClosedIdle is the text of net/http's unexported error for a
// request sent on a pooled connection the server had already closed.
const errServerClosedIdle = "http: server closed idle connection"

// neverReceived reports whether err, from a request that went on a
// reused connection and got no response byte, is one of a connection
// the server had closed: net/http's "server closed idle connection",
// or EOF, ECONNRESET or EPIPE in writing the request or reading the
// first response byte. net.ErrClosed counts too: the transport's reader
// closes the connection when it sees the server's EOF, and its writer,
// racing it, then writes the request to the closed connection (a
// cancelled request gets it too, but do does not retry those).
func neverReceived(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil && ue.Err.Error() == errServerClosedIdle {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
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

// chunk is what parse reads from one streamed chunk.
type chunk struct {
	// generated is set when the chunk carries generated text: content or
	// reasoning_content for chat, text for completions.
	generated bool
	// text is the chat chunk's content (not its reasoning_content), the
	// completion chunk's text.
	text  string
	usage *openai.Usage
}

// parse decodes one chunk.
func (q *requester) parse(data []byte) (chunk, error) {
	if q.api == APICompletions {
		var c openai.Completion
		if err := json.Unmarshal(data, &c); err != nil {
			return chunk{}, fmt.Errorf("loadgen: decode chunk: %w", err)
		}
		out := chunk{usage: c.Usage}
		for _, ch := range c.Choices {
			out.text += ch.Text
		}
		out.generated = out.text != ""
		return out, nil
	}
	var c openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return chunk{}, fmt.Errorf("loadgen: decode chunk: %w", err)
	}
	out := chunk{usage: c.Usage}
	for _, ch := range c.Choices {
		if ch.Delta.Content != nil {
			out.text += *ch.Delta.Content
		}
		out.generated = out.generated || (ch.Delta.ReasoningContent != nil && *ch.Delta.ReasoningContent != "")
	}
	out.generated = out.generated || out.text != ""
	return out, nil
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
