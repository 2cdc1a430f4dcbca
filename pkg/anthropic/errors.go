package anthropic

import "net/http"

// StatusOverloaded is the status of an overloaded_error: Anthropic's 529.
const StatusOverloaded = 529

// ErrorBody is the body of every non-2xx answer of the Messages API and
// the data of a stream's error event:
//
//	{"type":"error","error":{"type":"invalid_request_error","message":"..."}}
type ErrorBody struct {
	Type  string    `json:"type"` // always "error"
	Error ErrorInfo `json:"error"`
	// RequestID is the request's id, when known.
	RequestID string `json:"request_id,omitempty"`
}

// ErrorInfo is the object inside an ErrorBody.
type ErrorInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// NewErrorBody returns the body of an error of status with msg; its type
// is ErrorType(status).
func NewErrorBody(status int, msg, requestID string) ErrorBody {
	return ErrorBody{Type: "error", Error: ErrorInfo{Type: ErrorType(status), Message: msg}, RequestID: requestID}
}

// ErrorType is Anthropic's error type of an HTTP status:
// invalid_request_error (400 and other 4xx), authentication_error (401),
// permission_error (403), not_found_error (404), request_too_large (413),
// rate_limit_error (429), timeout_error (504), overloaded_error (529)
// and api_error (500 and other 5xx).
func ErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case StatusOverloaded:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
