package backend

import (
	"errors"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// The error taxonomy engines report (the reference system's DynamoError
// types). They are the runtime's typed errors: they keep their type across
// the network, and callers match them with errors.Is. Create one with
// runtime.NewError(backend.TypeEngineShutdown, "...") or wrap a sentinel:
// fmt.Errorf("%w: out of memory", backend.ErrEngineShutdown).
var (
	ErrInvalidArgument   = runtime.ErrInvalidArgument
	ErrCannotConnect     = runtime.ErrCannotConnect
	ErrEngineShutdown    = runtime.ErrEngineShutdown
	ErrStreamIncomplete  = runtime.ErrStreamIncomplete
	ErrCancelled         = runtime.ErrCancelled
	ErrConnectionTimeout = runtime.ErrConnectionTimeout
	ErrResponseTimeout   = runtime.ErrResponseTimeout
	ErrDisconnected      = runtime.ErrDisconnected
	ErrUnknown           = runtime.ErrUnknown
)

// ErrDropStream, returned by Generate, makes the worker drop the response
// connection without the stream's final marker, as a crashed worker would.
// It exists for fault injection in tests (the mocker's --drop-after-tokens).
var ErrDropStream = errors.New("backend: drop the response stream")

// Error types, for runtime.NewError.
const (
	TypeInvalidArgument = runtime.TypeInvalidArgument
	TypeEngineShutdown  = runtime.TypeEngineShutdown
	TypeUnknown         = runtime.TypeUnknown
)
