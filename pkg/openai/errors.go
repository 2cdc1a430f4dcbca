package openai

import "net/http"

// ValidationError is a request the frontend refuses with 400. Its message
// is what the client sees.
type ValidationError struct {
	Message string
}

func (e *ValidationError) Error() string { return e.Message }

// fieldError is a decoding failure inside a custom unmarshaller; Decode
// turns it into a ValidationError naming field.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// ErrorBody is the flat error body every non-2xx JSON response carries:
// {"message", "type", "code"}, type being the HTTP reason phrase.
type ErrorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// NewErrorBody returns the body for status with msg.
func NewErrorBody(status int, msg string) ErrorBody {
	t := http.StatusText(status)
	switch status {
	case 499:
		t = "Client Closed Request"
	case 529:
		t = "Overloaded"
	}
	return ErrorBody{Message: msg, Type: t, Code: status}
}
