package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrorType classifies an Error. The values and their JSON spelling are the
// reference system's DynamoError error_type, so the classification survives
// the network hop between processes.
type ErrorType string

// The error taxonomy. Backend sub-kinds are spelled "Backend.<Kind>".
const (
	TypeUnknown           ErrorType = "Unknown"
	TypeInvalidArgument   ErrorType = "InvalidArgument"
	TypeCannotConnect     ErrorType = "CannotConnect"
	TypeDisconnected      ErrorType = "Disconnected"
	TypeConnectionTimeout ErrorType = "ConnectionTimeout"
	TypeResponseTimeout   ErrorType = "ResponseTimeout"
	TypeCancelled         ErrorType = "Cancelled"
	TypeResourceExhausted ErrorType = "ResourceExhausted"
	TypeWorkerOverloaded  ErrorType = "WorkerOverloaded"
	TypeEngineShutdown    ErrorType = "Backend.EngineShutdown"
	TypeStreamIncomplete  ErrorType = "Backend.StreamIncomplete"
)

// Class sentinels: errors.Is(err, ErrDisconnected) holds for every *Error of
// that type, wherever it was created, including on the other side of the
// network.
var (
	ErrUnknown           = &Error{Type: TypeUnknown}
	ErrInvalidArgument   = &Error{Type: TypeInvalidArgument}
	ErrCannotConnect     = &Error{Type: TypeCannotConnect}
	ErrDisconnected      = &Error{Type: TypeDisconnected}
	ErrConnectionTimeout = &Error{Type: TypeConnectionTimeout}
	ErrResponseTimeout   = &Error{Type: TypeResponseTimeout}
	ErrCancelled         = &Error{Type: TypeCancelled}
	ErrResourceExhausted = &Error{Type: TypeResourceExhausted}
	ErrWorkerOverloaded  = &Error{Type: TypeWorkerOverloaded}
	ErrEngineShutdown    = &Error{Type: TypeEngineShutdown}
	ErrStreamIncomplete  = &Error{Type: TypeStreamIncomplete}
)

// ErrAckTimeout matches a call whose instance is alive but did not accept
// the request within the request plane's ack timeout (TCP: an ack timeout
// on a connection that still works; NATS: a request that reached the
// instance's subscription and got no reply in time). The instance is
// busy, not gone: the error also matches ErrWorkerOverloaded, and
// IsInstanceFault does not match it, so a router keeps the instance in
// rotation. Only that request failed; nothing reached the engine.
var ErrAckTimeout = errors.New("runtime: no ack within the ack timeout")

// Messages with a fixed meaning on the wire.
const (
	// MsgStreamEnded is the message of the Disconnected error a caller sees
	// when a response stream ends without its complete_final marker.
	MsgStreamEnded = "Stream ended before generation completed"
	// MsgNotEstablished is the message when a worker went away before it
	// called home.
	MsgNotEstablished = "Worker disconnected before response stream was established"
)

// Error is a typed error that crosses process boundaries as the JSON object
// {"error_type", "message", "caused_by"}. Two *Error values match under
// errors.Is when their types are equal, so the class sentinels above work
// as targets; a chain is walked through Cause.
type Error struct {
	Type    ErrorType `json:"error_type"`
	Message string    `json:"message"`
	Cause   *Error    `json:"caused_by,omitempty"`
}

// NewError returns an *Error of type t.
func NewError(t ErrorType, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
}

// Error renders "<Type>: <message>[: <cause>]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Type))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Is reports whether target is an *Error of the same type.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) || t == nil {
		return false
	}
	return t.Type == e.Type
}

// Unwrap returns the cause, so errors.Is walks the remote chain.
func (e *Error) Unwrap() error {
	if e.Cause == nil {
		return nil
	}
	return e.Cause
}

// UnmarshalJSON also accepts the older shape whose error_type is an object
// such as {"Backend":"EngineShutdown"}.
func (e *Error) UnmarshalJSON(b []byte) error {
	var raw struct {
		Type    json.RawMessage `json:"error_type"`
		Message string          `json:"message"`
		Cause   *Error          `json:"caused_by"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Message, e.Cause, e.Type = raw.Message, raw.Cause, TypeUnknown
	var s string
	if err := json.Unmarshal(raw.Type, &s); err == nil {
		e.Type = ErrorType(s)
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw.Type, &m); err == nil && len(m) == 1 {
		for k, v := range m {
			e.Type = ErrorType(k + "." + v)
		}
	}
	return nil
}

// asError converts any error into an *Error for the wire: an *Error found in
// the chain is returned as is (with the outer text kept as context), anything
// else becomes TypeUnknown with the error's text.
func asError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if err.Error() == e.Error() {
			return e
		}
		return &Error{Type: e.Type, Message: strings.TrimSuffix(err.Error(), ": "+e.Error()), Cause: e}
	}
	return &Error{Type: TypeUnknown, Message: err.Error()}
}

// knownTypes are the types parseErrorText recognises.
var knownTypes = []ErrorType{
	TypeUnknown, TypeInvalidArgument, TypeCannotConnect, TypeDisconnected, TypeConnectionTimeout,
	TypeResponseTimeout, TypeCancelled, TypeResourceExhausted, TypeWorkerOverloaded,
	TypeEngineShutdown, TypeStreamIncomplete,
}

// parseErrorText reads the display form "<Type>: <message>" of an *Error
// back, for channels that carry only text (request-plane acks). It returns
// nil when the text does not start with a known type.
func parseErrorText(text string) *Error {
	typ, msg, ok := strings.Cut(text, ": ")
	if !ok {
		return nil
	}
	for _, t := range knownTypes {
		if ErrorType(typ) == t {
			return &Error{Type: t, Message: msg}
		}
	}
	return nil
}

// typeOf returns the type of the first *Error in err's chain, or TypeUnknown.
func typeOf(err error) ErrorType {
	var e *Error
	if errors.As(err, &e) {
		return e.Type
	}
	return TypeUnknown
}

// IsInstanceFault reports whether err says the instance that served the call
// is unreachable or gone: CannotConnect, Disconnected, ConnectionTimeout,
// ResponseTimeout or EngineShutdown. A router takes such an instance out of
// rotation for a while; migration may re-issue the request elsewhere.
func IsInstanceFault(err error) bool {
	for _, target := range []error{ErrCannotConnect, ErrDisconnected, ErrConnectionTimeout, ErrResponseTimeout, ErrEngineShutdown} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
