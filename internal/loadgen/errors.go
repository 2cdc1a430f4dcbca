package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// ErrorKind classifies a failed request.
type ErrorKind string

// The kinds of failure a report counts separately.
const (
	// KindHTTP is a response with a status other than 200.
	KindHTTP ErrorKind = "http_status"
	// KindSSE is an "event: error" (or a data frame holding an "error"
	// object) in the stream.
	KindSSE ErrorKind = "sse_error"
	// KindTransport is a failed connection, request write or body read,
	// including a connection closed in mid-stream.
	KindTransport ErrorKind = "transport"
	// KindTimeout is a request that exceeded Config.Timeout.
	KindTimeout ErrorKind = "timeout"
	// KindProtocol is a stream that ended without [DONE] or carried a
	// chunk that is not valid JSON.
	KindProtocol ErrorKind = "protocol"
)

// RequestError is why one request failed.
type RequestError struct {
	// Kind is the class of failure.
	Kind ErrorKind
	// Status is the HTTP status for KindHTTP.
	Status int
	// Err is the underlying error or the server's message.
	Err error
}

// Error names the kind, the status for KindHTTP, and the cause.
func (e *RequestError) Error() string {
	if e.Kind == KindHTTP {
		return fmt.Sprintf("loadgen: %s %d: %v", e.Kind, e.Status, e.Err)
	}
	return fmt.Sprintf("loadgen: %s: %v", e.Kind, e.Err)
}

// Unwrap returns the cause.
func (e *RequestError) Unwrap() error { return e.Err }

// transportError classifies an error from sending the request or reading
// the body: a timeout when the request's deadline passed, otherwise a
// transport failure.
func transportError(reqCtx context.Context, err error) *RequestError {
	var ne net.Error
	if errors.Is(reqCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		return &RequestError{Kind: KindTimeout, Err: err}
	}
	return &RequestError{Kind: KindTransport, Err: err}
}
