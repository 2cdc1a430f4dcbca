package frontend

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// The messages of a 401, worded like OpenAI's and, on the Messages API,
// like Anthropic's. None echoes the key.
const (
	msgMissingKey          = "You didn't provide an API key. Provide it in an Authorization header using Bearer auth (Authorization: Bearer YOUR_KEY)."
	msgWrongKey            = "Incorrect API key provided."
	msgMissingKeyAnthropic = "x-api-key header is required (or an Authorization: Bearer header)"
	msgWrongKeyAnthropic   = "invalid x-api-key"
)

// auth admits a request that carries one of the API keys
// (Config.APIKeys), as a bearer token or in an x-api-key header (as
// Anthropic's clients send it), or asks for an exempt path, and
// answers every other request 401. It keeps only the keys' SHA-256
// digests: a presented key's digest is compared with every one of them in
// constant time, so neither the time taken nor which comparison matched
// tells a client anything about the keys.
type auth struct {
	digests [][sha256.Size]byte
	exempt  []string
	log     *slog.Logger
	next    http.Handler
}

// newAuth returns the API key middleware, or nil when no key is given.
func newAuth(keys, exempt []string, log *slog.Logger) func(http.Handler) http.Handler {
	if len(keys) == 0 {
		return nil
	}
	digests := make([][sha256.Size]byte, len(keys))
	for i, k := range keys {
		digests[i] = sha256.Sum256([]byte(k))
	}
	return func(next http.Handler) http.Handler {
		return &auth{digests: digests, exempt: exempt, log: log, next: next}
	}
}

func (a *auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.isExempt(routePath(r)) {
		a.next.ServeHTTP(w, r)
		return
	}
	key, ok := presentedKey(r)
	switch {
	case !ok:
		a.refuse(w, r, "no API key", false, "Bearer")
	case !a.valid(key):
		a.refuse(w, r, "wrong API key", true, `Bearer error="invalid_token"`)
	default:
		a.next.ServeHTTP(w, r)
	}
}

// valid reports whether key is one of the keys.
func (a *auth) valid(key string) bool {
	d := sha256.Sum256([]byte(key))
	match := 0
	for i := range a.digests {
		match |= subtle.ConstantTimeCompare(d[:], a.digests[i][:])
	}
	return match == 1
}

// isExempt reports whether path is served without a key: it equals an
// exempt path, or starts with one that ends in "*".
func (a *auth) isExempt(path string) bool {
	for _, p := range a.exempt {
		if prefix, ok := strings.CutSuffix(p, "*"); path == p || (ok && strings.HasPrefix(path, prefix)) {
			return true
		}
	}
	return false
}

// refuse logs the refusal once, at debug level (scanners are frequent),
// and answers 401 with a Bearer challenge (RFC 6750 §3: a wrong key is an
// invalid_token, a missing one gets no error code) and, on the Messages
// API, Anthropic's authentication_error; elsewhere OpenAI's error type
// and code for a bad key (invalid_request_error, invalid_api_key).
// Requests refused here never reach a handler, so the request metrics,
// which count per model, do not count them.
func (a *auth) refuse(w http.ResponseWriter, r *http.Request, why string, wrong bool, challenge string) {
	a.log.Debug("frontend: request refused: "+why, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "status", http.StatusUnauthorized)
	w.Header().Set("WWW-Authenticate", challenge)
	if shapeOf(r) == anthropicErrors {
		msg := msgMissingKeyAnthropic
		if wrong {
			msg = msgWrongKeyAnthropic
		}
		writeError(w, anthropicErrors, apiError{status: http.StatusUnauthorized, kind: ErrValidation, message: msg})
		return
	}
	msg := msgMissingKey
	if wrong {
		msg = msgWrongKey
	}
	body := openai.NewErrorBody(http.StatusUnauthorized, msg, "")
	body.Error.Type, body.Error.Code = "invalid_request_error", codeInvalidAPIKey
	writeJSON(w, http.StatusUnauthorized, body)
}

// codeInvalidAPIKey is the error code OpenAI gives a 401 of a bad key; the
// SDKs read it, so it replaces the status as the code.
var codeInvalidAPIKey = json.RawMessage(`"invalid_api_key"`)

// presentedKey returns the API key r carries: its bearer token, else its
// x-api-key header.
func presentedKey(r *http.Request) (string, bool) {
	if key, ok := bearer(r.Header.Get("Authorization")); ok {
		return key, true
	}
	key := strings.TrimSpace(r.Header.Get("X-Api-Key"))
	return key, key != ""
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// routePath is the path chi routes r by, so that an exempt path names
// exactly the route it opens, however the client escaped the URL.
func routePath(r *http.Request) string {
	if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePath != "" {
		return rctx.RoutePath
	}
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	if r.URL.Path == "" {
		return "/"
	}
	return r.URL.Path
}

// checkAPIKey refuses a key that cannot travel as a bearer token.
func checkAPIKey(k string) error {
	if k == "" {
		return errors.New("empty")
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return errors.New("must be printable ASCII without spaces")
		}
	}
	return nil
}
