package frontend

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

const (
	appOrigin   = "https://app.example.com"
	otherOrigin = "https://evil.example.net"
	chatBody    = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`
	streamBody  = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`
)

// preflight is a browser's preflight for a POST with the key and a JSON
// body, as the OpenAI JS SDK sends it.
func preflight(origin string) http.Header {
	return http.Header{
		"Origin":                         {origin},
		"Access-Control-Request-Method":  {"POST"},
		"Access-Control-Request-Headers": {"authorization,content-type,x-stainless-os"},
	}
}

// corsHeaders returns the Access-Control-* headers of h.
func corsHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = v
		}
	}
	return out
}

func TestCORSIsOffByDefault(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	origin := http.Header{"Origin": {appOrigin}}
	for _, r := range []response{
		request(t, http.MethodOptions, s.url+"/v1/chat/completions", "", preflight(appOrigin)),
		request(t, http.MethodPost, s.url+"/v1/chat/completions", chatBody, origin),
		request(t, http.MethodPost, s.url+"/v1/chat/completions", streamBody, origin),
		request(t, http.MethodGet, s.url+"/v1/models", "", origin),
	} {
		if h := corsHeaders(r.header); len(h) > 0 || slices.Contains(r.header.Values("Vary"), "Origin") {
			t.Errorf("CORS headers with CORS off: %d %v", r.status, r.header)
		}
	}
}

func TestCORSAllowedOrigins(t *testing.T) {
	s := newStack(t, Config{APIKeys: []string{"sk-k"}, CORSAllowedOrigins: []string{appOrigin, "http://localhost:3000"}}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	key := http.Header{"Authorization": {"Bearer sk-k"}}
	with := func(h http.Header, origin string) http.Header {
		out := http.Header{"Origin": {origin}}
		for k, v := range h {
			out[k] = v
		}
		return out
	}

	t.Run("preflight needs no key", func(t *testing.T) {
		r := request(t, http.MethodOptions, s.url+"/v1/chat/completions", "", preflight(appOrigin))
		h := r.header
		if r.status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != appOrigin || h.Get("Access-Control-Max-Age") != corsMaxAge {
			t.Fatalf("%d %v", r.status, h)
		}
		if m := h.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "POST") || !strings.Contains(m, "GET") {
			t.Errorf("Allow-Methods %q", m)
		}
		allowed := strings.Split(h.Get("Access-Control-Allow-Headers"), ", ")
		for _, want := range []string{"Authorization", "X-Api-Key", "Anthropic-Version", "Content-Type", "X-Request-Id", "X-Stainless-Os"} {
			if !slices.Contains(allowed, want) {
				t.Errorf("Allow-Headers %v lacks %s", allowed, want)
			}
		}
		if !slices.Contains(h.Values("Vary"), "Origin") {
			t.Errorf("Vary %v", h.Values("Vary"))
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("credentials allowed: %v", h)
		}
	})
	t.Run("preflight from another origin", func(t *testing.T) {
		r := request(t, http.MethodOptions, s.url+"/v1/chat/completions", "", preflight(otherOrigin))
		if r.status == http.StatusUnauthorized || len(corsHeaders(r.header)) > 0 {
			t.Errorf("%d %v", r.status, r.header)
		}
	})
	t.Run("answers to an allowed origin", func(t *testing.T) {
		for name, r := range map[string]response{
			"unary":        request(t, http.MethodPost, s.url+"/v1/chat/completions", chatBody, with(key, appOrigin)),
			"stream":       request(t, http.MethodPost, s.url+"/v1/chat/completions", streamBody, with(key, "http://localhost:3000")),
			"models":       request(t, http.MethodGet, s.url+"/v1/models", "", with(key, appOrigin)),
			"no key (401)": request(t, http.MethodPost, s.url+"/v1/chat/completions", chatBody, with(nil, appOrigin)),
			"error (404)":  request(t, http.MethodPost, s.url+"/v1/chat/completions", strings.Replace(chatBody, "demo", "nope", 1), with(key, appOrigin)),
		} {
			want := map[string]int{"no key (401)": 401, "error (404)": 404}[name]
			if want == 0 {
				want = 200
			}
			origin := r.header.Get("Access-Control-Allow-Origin")
			if r.status != want || (origin != appOrigin && origin != "http://localhost:3000") || !slices.Contains(r.header.Values("Vary"), "Origin") {
				t.Errorf("%s: %d %v %s", name, r.status, r.header, r.body)
			}
			if name == "stream" {
				if _, done := sseData(t, r.body); !done || r.header.Get("Content-Type") != "text/event-stream" {
					t.Errorf("stream: %v %s", r.header, r.body)
				}
			}
			if name != "no key (401)" && r.header.Get("Access-Control-Expose-Headers") != "X-Request-Id" {
				t.Errorf("%s: Expose-Headers %q", name, r.header.Get("Access-Control-Expose-Headers"))
			}
		}
	})
	t.Run("answers to another origin", func(t *testing.T) {
		for _, r := range []response{
			request(t, http.MethodPost, s.url+"/v1/chat/completions", chatBody, with(key, otherOrigin)),
			request(t, http.MethodPost, s.url+"/v1/chat/completions", streamBody, with(key, "https://app.example.com.evil.net")),
			request(t, http.MethodPost, s.url+"/v1/chat/completions", chatBody, with(key, "http://app.example.com")),
		} {
			if r.status != 200 || len(corsHeaders(r.header)) > 0 {
				t.Errorf("%d %v", r.status, r.header)
			}
		}
	})
}

func TestCORSAnyOrigin(t *testing.T) {
	url := startService(t, Config{CORSAllowedOrigins: []string{"*"}}, nil)
	r := request(t, http.MethodOptions, url+"/v1/models", "", preflight(otherOrigin))
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
	r = request(t, http.MethodGet, url+"/v1/models", "", http.Header{"Origin": {otherOrigin}})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET: %d %v", r.status, r.header)
	}
	if r = request(t, http.MethodGet, url+"/v1/models", "", nil); len(corsHeaders(r.header)) > 0 {
		t.Errorf("a request without Origin got CORS headers: %v", r.header)
	}
}
