package frontend

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Errors of the service itself.
var (
	// ErrModelNotFound: no worker serves the requested model.
	ErrModelNotFound = errors.New("Model not found")
	// ErrNotReady: the service is starting or shutting down.
	ErrNotReady = errors.New("Service is not ready")
	// errClientGone: the client disconnected before the answer was sent.
	errClientGone = errors.New("client disconnected")
	// errStreamTimeout: no item from the worker within StreamTimeout.
	errStreamTimeout = errors.New("timed out waiting for the worker's next response")
)

// apiError is an error as the client sees it.
type apiError struct {
	status  int
	kind    string // metrics error_type
	message string
	param   string // the request field at fault, or ""
}

// classify maps any error of a request to its HTTP status, error_type
// label, client-facing message and param. It is the only place that does.
func (s *Service) classify(err error) apiError {
	var ve *openai.ValidationError
	var mbe *http.MaxBytesError
	var re *runtime.Error
	switch {
	case errors.As(err, &ve):
		return apiError{http.StatusBadRequest, ErrValidation, ve.Message, ve.Param}
	case errors.As(err, &mbe):
		return apiError{http.StatusRequestEntityTooLarge, ErrValidation, fmt.Sprintf("Request body too large: the limit is %d bytes", mbe.Limit), ""}
	case errors.Is(err, ErrModelNotFound):
		return apiError{http.StatusNotFound, ErrNotFound, err.Error(), ""}
	case errors.Is(err, ErrNotReady):
		return apiError{http.StatusServiceUnavailable, ErrUnavailable, ErrNotReady.Error(), ""}
	case errors.Is(err, errClientGone):
		return apiError{499, ErrCancelled, "Client closed the request", ""}
	case errors.Is(err, errStreamTimeout):
		return apiError{http.StatusGatewayTimeout, ErrResponseTimeout, errStreamTimeout.Error(), ""}
	case errors.Is(err, router.ErrNoInstances), errors.Is(err, router.ErrTargetUnavailable):
		return apiError{http.StatusServiceUnavailable, ErrUnavailable, "No worker is available for this model: " + err.Error(), ""}
	case errors.As(err, &re):
		switch re.Type {
		case runtime.TypeInvalidArgument:
			return apiError{http.StatusBadRequest, ErrValidation, re.Message, ""}
		case runtime.TypeResourceExhausted, runtime.TypeWorkerOverloaded:
			return apiError{s.cfg.OverloadStatus, ErrOverload, "The model's workers are overloaded: " + re.Message, ""}
		case runtime.TypeCannotConnect, runtime.TypeEngineShutdown:
			return apiError{http.StatusServiceUnavailable, ErrUnavailable, "No worker is available for this model: " + re.Error(), ""}
		case runtime.TypeResponseTimeout, runtime.TypeConnectionTimeout:
			return apiError{http.StatusGatewayTimeout, ErrResponseTimeout, re.Error(), ""}
		case runtime.TypeCancelled:
			return apiError{499, ErrCancelled, "Request cancelled", ""}
		}
		return apiError{http.StatusInternalServerError, ErrInternal, re.Error(), ""}
	case errors.Is(err, context.Canceled):
		return apiError{499, ErrCancelled, "Request cancelled", ""}
	}
	return apiError{http.StatusInternalServerError, ErrInternal, "Internal server error: " + err.Error(), ""}
}

// body is e's error body, the same in a JSON response and in an SSE
// error event.
func (e apiError) body() openai.ErrorBody {
	return openai.NewErrorBody(e.status, e.message, e.param)
}

// writeError writes e as a JSON error response.
func writeError(w http.ResponseWriter, e apiError) {
	if e.status == http.StatusServiceUnavailable || e.status == http.StatusTooManyRequests {
		// A refusal the client may retry: say when (one second, until
		// the frontend queues requests and knows better).
		w.Header().Set("Retry-After", retryAfter)
	}
	writeJSON(w, e.status, e.body())
}

// retryAfter is the Retry-After of 503 and 429 answers, in seconds.
const retryAfter = "1"

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = openai.WriteJSON(w, v)
}
