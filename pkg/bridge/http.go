package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// post sends body as JSON to path, with header's fields besides the JSON
// ones, and returns a 200 response; any other status is an error typed by
// statusError.
func (e *Engine) post(ctx context.Context, path string, body any, header http.Header) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("bridge: encode the %s request: %w", e.cfg.Dialect, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	for k, v := range header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	return e.do(hreq)
}

// get fetches path; a non-200 status is an error typed by statusError.
func (e *Engine) get(ctx context.Context, path string) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return e.do(hreq)
}

// do sends hreq and types the failures: no connection is
// backend.ErrCannotConnect, a connection lost before the answer
// backend.ErrDisconnected, a non-200 status statusError's.
func (e *Engine) do(hreq *http.Request) (*http.Response, error) {
	resp, err := e.client.Do(hreq)
	var op *net.OpError
	if err != nil && hreq.Context().Err() == nil && !(errors.As(err, &op) && op.Op == "dial") && hreq.GetBody != nil {
		// A kept-alive connection the engine closed (it closes idle
		// ones, or it restarted): once more on a new connection, which
		// tells a dead engine from a stale connection. Not through the
		// pool, whose next idle connection may be as stale.
		if body, berr := hreq.GetBody(); berr == nil {
			retry := hreq.Clone(hreq.Context())
			retry.Body = body
			c := e.fresh
			if c == nil {
				c = e.client
			}
			resp, err = c.Do(retry)
		}
	}
	if err != nil {
		if ctxErr := hreq.Context().Err(); ctxErr != nil {
			return nil, fmt.Errorf("bridge: %s %s: %w", hreq.Method, hreq.URL.Path, context.Cause(hreq.Context()))
		}
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("bridge: %w: the %s engine at %s: %v", backend.ErrCannotConnect, e.cfg.Dialect, e.base, err)
		}
		return nil, fmt.Errorf("bridge: %w: the %s engine at %s: %v", backend.ErrDisconnected, e.cfg.Dialect, e.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, e.statusError(hreq, resp.StatusCode, b)
	}
	return resp, nil
}

// StatusError is an engine's answer with a status other than 200. It
// wraps the backend error class of the status: a 4xx (but 429)
// backend.ErrInvalidArgument, 429 and 502-504 backend.ErrEngineShutdown
// (the engine cannot serve now; another worker may), anything else
// backend.ErrUnknown.
type StatusError struct {
	// Dialect and Path name the engine API called.
	Dialect, Path string
	// Status is the HTTP status code.
	Status int
	// Message is the engine's error message (or its body).
	Message string
	class   error
}

// Error renders the class, the call and the engine's message.
func (s *StatusError) Error() string {
	return fmt.Sprintf("%v: the %s engine answered %s with %d: %s", s.class, s.Dialect, s.Path, s.Status, s.Message)
}

// Unwrap returns the error class.
func (s *StatusError) Unwrap() error { return s.class }

func (e *Engine) statusError(hreq *http.Request, status int, body []byte) error {
	s := &StatusError{Dialect: e.cfg.Dialect, Path: hreq.URL.Path, Status: status, Message: errorMessage(body)}
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusBadGateway ||
		status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
		s.class = backend.ErrEngineShutdown
	case status >= 400 && status < 500:
		s.class = backend.ErrInvalidArgument
	default:
		s.class = backend.ErrUnknown
	}
	return s
}

// errorMessage finds the message of an engine's error body: vLLM
// {"error":{"message"}} or {"message"}, SGLang {"error":{"message"}},
// {"error":"..."} or {"error_message"} (its LoRA endpoints), llama.cpp
// {"error":{"code","message","type"}}; else the body itself.
func errorMessage(body []byte) string {
	var v struct {
		Message      string          `json:"message"`
		ErrorMessage string          `json:"error_message"`
		Detail       json.RawMessage `json:"detail"`
		Error        json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		if len(v.Error) > 0 {
			var inner struct {
				Message string `json:"message"`
			}
			var s string
			switch {
			case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
				return inner.Message
			case json.Unmarshal(v.Error, &s) == nil && s != "":
				return s
			}
		}
		if v.Message != "" {
			return v.Message
		}
		if v.ErrorMessage != "" {
			return v.ErrorMessage
		}
		if len(v.Detail) > 0 {
			return string(v.Detail)
		}
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		return "(no message)"
	}
	return msg
}

// streamError is an error event in an engine's stream: a 4xx code is
// backend.ErrInvalidArgument; any other failure of the engine mid-stream
// is backend.ErrStreamIncomplete, so the request may migrate.
func streamError(dialect string, data []byte) error {
	var v struct {
		Error *struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
		Message string `json:"message"`
		Code    int    `json:"code"`
	}
	msg, code := errorMessage(data), 0
	if json.Unmarshal(data, &v) == nil {
		code = v.Code
		if v.Error != nil {
			code = v.Error.Code
		}
	}
	if code >= 400 && code < 500 && code != http.StatusTooManyRequests {
		return fmt.Errorf("bridge: %w: the %s engine: %s", backend.ErrInvalidArgument, dialect, msg)
	}
	return fmt.Errorf("bridge: %w: the %s engine failed mid-stream: %s", backend.ErrStreamIncomplete, dialect, msg)
}

// getJSON fetches path and decodes its JSON answer into v.
func (e *Engine) getJSON(ctx context.Context, path string, v any) error {
	resp, err := e.get(ctx, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("bridge: %s: %w", path, err)
	}
	return nil
}

// getOK returns nil when path answers 200, else the typed error (the
// body is read and dropped, so the connection is reused).
func (e *Engine) getOK(ctx context.Context, path string) error {
	resp, err := e.get(ctx, path)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return resp.Body.Close()
}

// sseReader reads server-sent events: it returns each event's field
// ("data", or "error" as llama.cpp sends it) and its data lines joined.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next event; io.EOF at a clean end of the body. A
// truncated body gives the transport's error (io.ErrUnexpectedEOF).
func (s *sseReader) next() (field string, data []byte, err error) {
	for {
		line, err := s.r.ReadBytes('\n')
		if line = bytes.TrimRight(line, "\r\n"); len(line) == 0 {
			if field != "" && err == nil {
				return field, data, nil
			}
		} else if line[0] != ':' { // ':' starts a comment (keep-alive)
			name, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			if n := string(name); n == "data" || n == "error" {
				if field != "" {
					data = append(data, '\n')
				}
				if field == "" || n == "error" {
					field = n
				}
				data = append(data, value...)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && field != "" {
				return field, data, nil
			}
			return "", nil, err
		}
	}
}
