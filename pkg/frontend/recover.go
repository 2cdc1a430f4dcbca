package frontend

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// recoverPanics is the outermost middleware. A handler that panics is
// logged once, with the panic and its stack, and the server goes on. A
// handler that had written nothing is answered 500 with the OpenAI error
// body; one that had (a stream under way) has its connection cut, so
// that the client sees the answer end early rather than wait for more.
// http.ErrAbortHandler, a handler's way to cut its connection on purpose,
// passes through untouched.
func recoverPanics(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				log.Error("frontend: handler panic", "method", r.Method, "path", r.URL.Path,
					"request_id", sw.Header().Get("x-request-id"), "panic", v, "stack", string(debug.Stack()))
				if sw.code != 0 {
					panic(http.ErrAbortHandler) // cut the connection; net/http logs nothing more
				}
				writeError(sw, shapeOf(r), apiError{status: http.StatusInternalServerError, kind: ErrInternal, message: "Internal server error", param: ""})
			}()
			next.ServeHTTP(sw, r)
		})
	}
}
