package frontend

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// corsMaxAge is how long, in seconds, a browser may reuse a preflight
// answer.
const corsMaxAge = "600"

// corsAllowHeaders are the request headers a page may always send: the
// key (Authorization, or Anthropic's x-api-key with its anthropic-version),
// the JSON body's type, the ids and trace context the frontend reads,
// and the session a request belongs to (X-Dynamo-Session-ID). A preflight that asks for more (the OpenAI JS SDK sends its
// x-stainless-* headers) gets those too: the origin is trusted already.
var corsAllowHeaders = []string{"Authorization", "X-Api-Key", "Anthropic-Version", "Content-Type", "X-Request-Id", "X-Dynamo-Request-Id", "X-Dynamo-Session-Id", "Traceparent", "Tracestate"}

// cors lets pages of the allowed origins (Config.CORSAllowedOrigins) call
// the API. It answers a preflight itself, before the API key check (a
// browser never sends the key with one), and marks every other answer to
// an allowed origin, errors and event streams included, with
// Access-Control-Allow-Origin. An origin not allowed gets no CORS header,
// so the browser keeps the answer from the page. Credentials (cookies)
// are not allowed: the key travels in the Authorization header.
type cors struct {
	any     bool            // "*" is allowed
	origins map[string]bool // normalized (normalizeOrigin)
	next    http.Handler
}

// newCORS returns the CORS middleware, or nil when no origin is allowed.
func newCORS(origins []string) func(http.Handler) http.Handler {
	if len(origins) == 0 {
		return nil
	}
	c := &cors{origins: map[string]bool{}}
	for _, o := range origins {
		n, _ := normalizeOrigin(o) // Config.Validate refused the bad ones
		c.any = c.any || n == "*"
		c.origins[n] = true
	}
	return func(next http.Handler) http.Handler {
		cc := *c
		cc.next = next
		return &cc
	}
}

func (c *cors) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin")
	origins, sent := r.Header["Origin"]
	allowed := sent && c.allows(origins[0])
	if r.Method == http.MethodOptions && sent && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		if allowed {
			c.allowOrigin(h, origins[0])
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", allowHeaders(r.Header.Values("Access-Control-Request-Headers")))
			h.Set("Access-Control-Max-Age", corsMaxAge)
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if allowed {
		c.allowOrigin(h, origins[0])
		h.Set("Access-Control-Expose-Headers", "X-Request-Id")
	}
	c.next.ServeHTTP(w, r)
}

func (c *cors) allows(origin string) bool {
	return c.any || c.origins[strings.ToLower(origin)]
}

func (c *cors) allowOrigin(h http.Header, origin string) {
	if c.any {
		h.Set("Access-Control-Allow-Origin", "*")
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
}

// allowHeaders is corsAllowHeaders plus the well-formed header names a
// preflight asked for.
func allowHeaders(requested []string) string {
	out := append([]string(nil), corsAllowHeaders...)
	for _, list := range requested {
		for name := range strings.SplitSeq(list, ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			if isToken(name) && !containsFold(out, name) {
				out = append(out, name)
			}
		}
	}
	return strings.Join(out, ", ")
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// isToken reports whether s is a non-empty header name of letters,
// digits and '-' (the names browsers send).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

// normalizeOrigin returns an allowed origin as browsers send it,
// scheme://host[:port] in lower case, or "*".
func normalizeOrigin(o string) (string, error) {
	if o == "*" {
		return o, nil
	}
	u, err := url.Parse(strings.TrimSuffix(o, "/"))
	switch {
	case err != nil:
		return "", errors.New("want scheme://host[:port] or *")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("want an http:// or https:// origin, or *")
	case u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "":
		return "", errors.New("want scheme://host[:port], without a path")
	case strings.Contains(u.Host, "*"):
		return "", errors.New("a wildcard must be the whole origin (*)")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}
