package frontend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/admission"
	"github.com/dynamo-go/dynamo/pkg/anthropic"
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
	// retryAfter is the Retry-After of an overload refusal, a 503 or a
	// 429 (0: one second).
	retryAfter time.Duration
}

// classify maps any error of a request to its HTTP status, error_type
// label, client-facing message and param. It is the only place that does.
func (s *Service) classify(err error) apiError {
	var ve *openai.ValidationError
	var mbe *http.MaxBytesError
	var re *runtime.Error
	var refused *admission.RefusedError
	var stored *storedError
	switch {
	case errors.As(err, &stored):
		return apiError{status: stored.status, kind: stored.kind(), message: stored.message, param: stored.param}
	case errors.As(err, &ve):
		return apiError{status: http.StatusBadRequest, kind: ErrValidation, message: ve.Message, param: ve.Param}
	case errors.As(err, &mbe):
		return apiError{status: http.StatusRequestEntityTooLarge, kind: ErrValidation, message: fmt.Sprintf("Request body too large: the limit is %d bytes", mbe.Limit), param: ""}
	case errors.Is(err, ErrModelNotFound):
		return apiError{status: http.StatusNotFound, kind: ErrNotFound, message: err.Error(), param: ""}
	case errors.Is(err, ErrNotReady):
		return apiError{status: http.StatusServiceUnavailable, kind: ErrUnavailable, message: ErrNotReady.Error(), param: ""}
	case errors.Is(err, errClientGone):
		return apiError{status: 499, kind: ErrCancelled, message: "Client closed the request", param: ""}
	case errors.Is(err, errStreamTimeout):
		return apiError{status: http.StatusGatewayTimeout, kind: ErrResponseTimeout, message: errStreamTimeout.Error(), param: ""}
	case errors.Is(err, router.ErrNoInstances), errors.Is(err, router.ErrTargetUnavailable):
		return apiError{status: http.StatusServiceUnavailable, kind: ErrUnavailable, message: "No worker is available for this model: " + err.Error(), param: ""}
	case errors.Is(err, errTenantLimit):
		e := apiError{status: http.StatusTooManyRequests, kind: ErrOverload, message: capitalize(err.Error())}
		if tl := (*tenantLimitError)(nil); errors.As(err, &tl) {
			e.retryAfter = tl.retryAfter
		}
		return e
	case errors.As(err, &refused):
		// Overload, not a fault: the queue in front of the model's
		// workers was full, or the request waited it out.
		return apiError{status: s.cfg.OverloadStatus, kind: ErrOverload, message: capitalize(refused.Error()), retryAfter: refused.RetryAfter}
	case errors.As(err, &re):
		switch re.Type {
		case runtime.TypeInvalidArgument:
			return apiError{status: http.StatusBadRequest, kind: ErrValidation, message: re.Message, param: ""}
		case runtime.TypeResourceExhausted, runtime.TypeWorkerOverloaded:
			return apiError{status: s.cfg.OverloadStatus, kind: ErrOverload, message: "The model's workers are overloaded: " + re.Message, param: ""}
		case runtime.TypeCannotConnect, runtime.TypeEngineShutdown:
			return apiError{status: http.StatusServiceUnavailable, kind: ErrUnavailable, message: "No worker is available for this model: " + re.Error(), param: ""}
		case runtime.TypeResponseTimeout, runtime.TypeConnectionTimeout:
			return apiError{status: http.StatusGatewayTimeout, kind: ErrResponseTimeout, message: re.Error(), param: ""}
		case runtime.TypeCancelled:
			return apiError{status: 499, kind: ErrCancelled, message: "Request cancelled", param: ""}
		}
		return apiError{status: http.StatusInternalServerError, kind: ErrInternal, message: re.Error(), param: ""}
	case errors.Is(err, context.Canceled):
		return apiError{status: 499, kind: ErrCancelled, message: "Request cancelled", param: ""}
	}
	return apiError{status: http.StatusInternalServerError, kind: ErrInternal, message: "Internal server error: " + err.Error(), param: ""}
}

// body is e's error body, the same in a JSON response and in an SSE
// error event.
func (e apiError) body() openai.ErrorBody {
	return openai.NewErrorBody(e.status, e.message, e.param)
}

// errorShape is the error body a route answers with: OpenAI's on every
// route but Anthropic's Messages API, which has its own.
type errorShape uint8

const (
	// openAIErrors: {"error":{"message","type","param","code"}}.
	openAIErrors errorShape = iota
	// anthropicErrors: {"type":"error","error":{"type","message"}}.
	anthropicErrors
)

// messagesPath is the route of Anthropic's Messages API; it and the
// paths under it answer errors in Anthropic's shape.
const messagesPath = "/v1/messages"

// shapeOf returns the error shape of r's route.
func shapeOf(r *http.Request) errorShape {
	if p := routePath(r); p == messagesPath || strings.HasPrefix(p, messagesPath+"/") {
		return anthropicErrors
	}
	return openAIErrors
}

// adapt returns e as sh's API reports it: Anthropic's overload refusal
// is a 529 (overloaded_error) whatever DYN_HTTP_OVERLOAD_STATUS_CODE
// says for the OpenAI routes; the tenant limit's 429 stays a 429.
func (sh errorShape) adapt(e apiError) apiError {
	if sh == anthropicErrors && e.kind == ErrOverload && e.status != http.StatusTooManyRequests {
		e.status = anthropic.StatusOverloaded
	}
	return e
}

// body returns e's body in shape sh; requestID goes into Anthropic's.
func (sh errorShape) body(e apiError, requestID string) any {
	if sh == anthropicErrors {
		return anthropic.NewErrorBody(e.status, e.message, requestID)
	}
	return e.body()
}

// writeError writes e as a JSON error response in shape sh.
func writeError(w http.ResponseWriter, sh errorShape, e apiError) {
	if e.status == http.StatusServiceUnavailable || e.status == http.StatusTooManyRequests || e.kind == ErrOverload {
		// A refusal the client may retry (whatever the overload status,
		// DYN_HTTP_OVERLOAD_STATUS_CODE, is): say when, in whole
		// seconds, at least one.
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((e.retryAfter+time.Second-1)/time.Second))))
	}
	writeJSON(w, e.status, sh.body(e, w.Header().Get("x-request-id")))
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = openai.WriteJSON(w, v)
}

// capitalize upper-cases the first letter of an ASCII message.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
