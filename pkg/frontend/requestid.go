package frontend

import (
	"net/http"

	"github.com/google/uuid"
)

// requestID picks the request id (spec §1.9): x-dynamo-request-id when it
// is a UUID, else x-request-id when it is a UUID, else a new UUID v4.
func requestID(r *http.Request) string {
	for _, h := range []string{"x-dynamo-request-id", "x-request-id"} {
		if v := r.Header.Get(h); v != "" {
			if u, err := uuid.Parse(v); err == nil {
				return u.String()
			}
		}
	}
	return uuid.NewString()
}
