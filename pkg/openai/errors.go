package openai

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ValidationError is a request the frontend refuses with 400. Its message
// is what the client sees.
type ValidationError struct {
	Message string
	// Param is the request field at fault, as a JSON path
	// ("temperature", "messages[0].role"), or "" when no single field is.
	// It becomes the error body's param.
	Param string
}

func (e *ValidationError) Error() string { return e.Message }

// fieldError is a decoding failure inside a custom unmarshaller; Decode
// turns it into a ValidationError naming field.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// ErrorBody is the body of every non-2xx JSON response and the data of an
// SSE error event, in OpenAI's nested form:
//
//	{"error":{"message":"...","type":"invalid_request_error","param":"temperature","code":400}}
//
// The OpenAI SDKs read their error's message, type, param and code from
// it.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is the object inside an ErrorBody.
type ErrorInfo struct {
	Message string `json:"message"`
	// Type is an OpenAI-style error type, "invalid_request_error" for a
	// 400 (see ErrorType).
	Type string `json:"type"`
	// Param is the request field at fault, or nil (JSON null).
	Param *string `json:"param"`
	// Code is a JSON number, the HTTP status, or a JSON string, an
	// OpenAI error code such as "invalid_api_key". It is kept as raw
	// JSON so that either survives decoding unchanged; Status reads the
	// number.
	Code json.RawMessage `json:"code"`
}

// Status returns Code as an HTTP status, and false when Code is not a
// number.
func (e ErrorInfo) Status() (int, bool) {
	n, err := strconv.Atoi(string(e.Code))
	return n, err == nil
}

// NewErrorBody returns the body for status with msg and the request field
// param ("" for none): type is the OpenAI-style error type of the status
// (ErrorType) and code the status.
func NewErrorBody(status int, msg, param string) ErrorBody {
	var p *string
	if param != "" {
		p = &param
	}
	return ErrorBody{ErrorInfo{Message: msg, Type: ErrorType(status), Param: p, Code: json.RawMessage(strconv.Itoa(status))}}
}

// ErrorType is the error body's type for an HTTP status, in the style of
// OpenAI's types: invalid_request_error (400, 413, 422 and other 4xx),
// authentication_error (401), permission_error (403), not_found_error
// (404), rate_limit_error (429), client_closed_request (499),
// not_implemented_error (501), service_unavailable_error (503),
// timeout_error (504), overloaded_error (529) and server_error (other
// 5xx).
func ErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 499:
		return "client_closed_request"
	case http.StatusNotImplemented:
		return "not_implemented_error"
	case http.StatusServiceUnavailable:
		return "service_unavailable_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// DecodeErrorBody reads an error body in any form a server may write:
// OpenAI's nested {"error":{"message",...}}, the flat
// {"message","type","code"} of older Dynamo frontends, or
// {"error":"<message>"}. It reports false when b holds no message.
func DecodeErrorBody(b []byte) (ErrorInfo, bool) {
	var top struct {
		Error json.RawMessage `json:"error"`
		ErrorInfo
	}
	if json.Unmarshal(b, &top) != nil {
		return ErrorInfo{}, false
	}
	var nested ErrorInfo
	var s string
	switch {
	case json.Unmarshal(top.Error, &nested) == nil && nested.Message != "":
		return nested, true
	case json.Unmarshal(top.Error, &s) == nil && s != "":
		return ErrorInfo{Message: s}, true
	case top.Message != "":
		return top.ErrorInfo, true
	}
	return ErrorInfo{}, false
}
