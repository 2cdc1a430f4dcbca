package frontend

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// sdk is an OpenAI Go SDK client of the stack that sends key, or no key
// at all when key is empty (whatever OPENAI_* variables the test runs
// with).
func (s *stack) sdk(key string) openai.Client {
	opts := []option.RequestOption{option.WithBaseURL(s.url + "/v1"), option.WithAPIKey(key), option.WithMaxRetries(0)}
	if key == "" {
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: noAuth{}}))
	}
	return openai.NewClient(opts...)
}

// noAuth sends requests without an Authorization header.
type noAuth struct{}

func (noAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	return http.DefaultTransport.RoundTrip(r)
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:     "demo",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		MaxTokens: openai.Int(5),
	}
}

// sdkChat runs chatParams unary and streamed and returns both texts.
func sdkChat(t *testing.T, c openai.Client) (unary, streamed string, err error) {
	t.Helper()
	resp, err := c.Chat.Completions.New(t.Context(), chatParams())
	if err != nil {
		return "", "", err
	}
	stream := c.Chat.Completions.NewStreaming(t.Context(), chatParams())
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return "", "", err
	}
	if len(resp.Choices) != 1 || len(acc.Choices) != 1 {
		t.Fatalf("choices: unary %d, streamed %d", len(resp.Choices), len(acc.Choices))
	}
	return resp.Choices[0].Message.Content, acc.Choices[0].Message.Content, nil
}

// wantUnauthorized checks that err is the SDK's error for a 401 with
// OpenAI's code and the given message, which never shows the key sent.
func wantUnauthorized(t *testing.T, err error, msg, sentKey string) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err %v (%T), want an *openai.Error", err, err)
	}
	if apiErr.StatusCode != http.StatusUnauthorized || apiErr.Code != "invalid_api_key" || apiErr.Type != "invalid_request_error" || apiErr.Message != msg {
		t.Errorf("status %d code %q type %q message %q; want 401 invalid_api_key invalid_request_error %q",
			apiErr.StatusCode, apiErr.Code, apiErr.Type, apiErr.Message, msg)
	}
	if got := apiErr.Response.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("WWW-Authenticate %q, want a Bearer challenge", got)
	}
	if sentKey != "" && strings.Contains(apiErr.RawJSON(), sentKey) {
		t.Errorf("the error body shows the key sent: %s", apiErr.RawJSON())
	}
}

func TestAPIKeysWithTheOpenAISDK(t *testing.T) {
	s := newStack(t, Config{APIKeys: []string{"sk-first", "sk-second"}}, pipeline.Config{})
	eng := helloEngine(t, 0)
	s.addWorker(t, "demo", eng)

	for _, key := range []string{"sk-first", "sk-second"} {
		unary, streamed, err := sdkChat(t, s.sdk(key))
		if err != nil || unary != "Hello world" || streamed != "Hello world" {
			t.Errorf("key %s: unary %q, streamed %q, err %v", key, unary, streamed, err)
		}
	}
	served := eng.count()

	t.Run("no key", func(t *testing.T) {
		c := s.sdk("")
		_, err := c.Chat.Completions.New(t.Context(), chatParams())
		wantUnauthorized(t, err, msgMissingKey, "")
		stream := c.Chat.Completions.NewStreaming(t.Context(), chatParams())
		for stream.Next() {
			t.Errorf("a chunk without a key: %s", stream.Current().RawJSON())
		}
		wantUnauthorized(t, stream.Err(), msgMissingKey, "")
		_ = stream.Close()
		_, err = c.Models.List(t.Context())
		wantUnauthorized(t, err, msgMissingKey, "")
	})
	t.Run("wrong key", func(t *testing.T) {
		for _, key := range []string{"sk-wrong", "sk-first-", "sk-firs", "SK-FIRST"} {
			c := s.sdk(key)
			_, err := c.Chat.Completions.New(t.Context(), chatParams())
			wantUnauthorized(t, err, msgWrongKey, key)
			stream := c.Chat.Completions.NewStreaming(t.Context(), chatParams())
			for stream.Next() {
				t.Errorf("a chunk with a wrong key: %s", stream.Current().RawJSON())
			}
			wantUnauthorized(t, stream.Err(), msgWrongKey, key)
			_ = stream.Close()
		}
	})
	t.Run("scheme and spacing", func(t *testing.T) {
		for auth, want := range map[string]int{
			"bearer sk-second":    200,
			"Bearer   sk-second ": 200,
			"Basic sk-second":     401,
			"sk-second":           401,
			"Bearer":              401,
		} {
			r := request(t, http.MethodGet, s.url+"/v1/models", "", http.Header{"Authorization": {auth}})
			if r.status != want {
				t.Errorf("Authorization %q: %d %s, want %d", auth, r.status, r.body, want)
			}
		}
	})
	t.Run("probes and metrics need no key", func(t *testing.T) {
		for _, path := range []string{"/health", "/live", "/metrics"} {
			if r := request(t, http.MethodGet, s.url+path, "", nil); r.status != 200 {
				t.Errorf("%s without a key: %d %s", path, r.status, r.body)
			}
		}
		for _, path := range []string{"/v1/models", "/v1/models/demo", "/busy_threshold", "/healthz", "/v1/nothing"} {
			if r := request(t, http.MethodGet, s.url+path, "", nil); r.status != http.StatusUnauthorized {
				t.Errorf("%s without a key: %d %s, want 401", path, r.status, r.body)
			}
		}
	})
	t.Run("refused requests reach no handler", func(t *testing.T) {
		if n := eng.count(); n != served {
			t.Errorf("the worker served %d requests, want the %d with a key", n, served)
		}
		// The request metrics count per model once a handler accepts a
		// request; a 401 is not one of them.
		m := string(s.get(t, "/metrics").body)
		if strings.Contains(m, `model="unknown_model"`) || strings.Contains(m, `status="error"`) {
			t.Errorf("refused requests in the request metrics:\n%s", grepLines(m, "requests_total"))
		}
	})
}

func TestNoAPIKeysLeavesTheAPIOpen(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	for _, key := range []string{"", "sk-anything"} {
		unary, streamed, err := sdkChat(t, s.sdk(key))
		if err != nil || unary != "Hello world" || streamed != "Hello world" {
			t.Errorf("key %q: unary %q, streamed %q, err %v", key, unary, streamed, err)
		}
	}
	for _, h := range []http.Header{nil, {"Authorization": {"Bearer whatever"}}, {"Authorization": {"Basic x"}}} {
		r := request(t, http.MethodPost, s.url+"/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"max_tokens":1}`, h)
		if r.status == http.StatusUnauthorized || r.status != 200 || r.header.Get("WWW-Authenticate") != "" {
			t.Errorf("headers %v: %d %v %s", h, r.status, r.header, r.body)
		}
	}
}

func TestAPIKeyExemptPaths(t *testing.T) {
	cases := []struct {
		name   string
		exempt []string
		open   []string // answer without a key
		closed []string // answer 401 without a key
	}{
		{"default", nil, []string{"/health", "/live", "/metrics"}, []string{"/v1/models", "/busy_threshold", "/health/", "/livez"}},
		{"listed", []string{"/live", "/v1/models*"}, []string{"/live", "/v1/models", "/v1/models/demo"}, []string{"/health", "/metrics", "/v1/modelz"}},
		{"none", []string{}, nil, []string{"/health", "/live", "/metrics"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := startService(t, Config{APIKeys: []string{"sk-k"}, AuthExemptPaths: c.exempt}, nil)
			for _, p := range c.open {
				if r := request(t, http.MethodGet, url+p, "", nil); r.status == http.StatusUnauthorized {
					t.Errorf("%s without a key: 401, want it open", p)
				}
			}
			for _, p := range c.closed {
				if r := request(t, http.MethodGet, url+p, "", nil); r.status != http.StatusUnauthorized {
					t.Errorf("%s without a key: %d, want 401", p, r.status)
				}
				if r := request(t, http.MethodGet, url+p, "", http.Header{"Authorization": {"Bearer sk-k"}}); r.status == http.StatusUnauthorized {
					t.Errorf("%s with the key: 401", p)
				}
			}
		})
	}
}

func TestAuthLogsRefusalsWithoutTheKey(t *testing.T) {
	var logs testenv.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	url := startService(t, Config{APIKeys: []string{"sk-right-key"}}, log)
	r := request(t, http.MethodGet, url+"/v1/models", "", http.Header{"Authorization": {"Bearer sk-guessed-key"}})
	if e := errorInfo(t, r.body); e.Message != msgWrongKey || e.Type != "invalid_request_error" || e.Param != nil || string(e.Code) != `"invalid_api_key"` {
		t.Errorf("401 body %s", r.body)
	}
	if r.status != 401 || r.header.Get("Content-Type") != "application/json" || r.header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Errorf("%d %v %s", r.status, r.header, r.body)
	}
	request(t, http.MethodGet, url+"/v1/models", "", nil)
	request(t, http.MethodGet, url+"/v1/models", "", http.Header{"Authorization": {"Bearer sk-right-key"}})
	out := logs.String()
	if strings.Count(out, "request refused: wrong API key") != 1 || strings.Count(out, "request refused: no API key") != 1 {
		t.Errorf("want one line per refused request:\n%s", out)
	}
	if strings.Contains(out, "sk-") {
		t.Errorf("a key in the log:\n%s", out)
	}
}

func TestConfigValidateRefusesBadAccessSettings(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{APIKeys: []string{"ok", ""}}, "API key 2 of 2: empty"},
		{Config{APIKeys: []string{"sec ret"}}, "API key 1 of 1: must be printable ASCII"},
		{Config{APIKeys: []string{"k"}, AuthExemptPaths: []string{"health"}}, `exempt path "health": must start with /`},
		{Config{CORSAllowedOrigins: []string{"example.com"}}, `"example.com"`},
		{Config{CORSAllowedOrigins: []string{"https://example.com/app"}}, "without a path"},
		{Config{CORSAllowedOrigins: []string{"ftp://example.com"}}, "http:// or https://"},
		{Config{CORSAllowedOrigins: []string{"https://*.example.com"}}, "wildcard"},
	}
	models, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Runtime: startRuntime(t, discovery.NewMemSpace())})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		_, err := New(c.cfg, Deps{Models: ServeRegistry(models)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.cfg, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "sec ret") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	for _, o := range []string{"*", "https://Example.com/", "http://localhost:3000"} {
		if err := (Config{CORSAllowedOrigins: []string{o}}).Validate(); err != nil {
			t.Errorf("%s: %v", o, err)
		}
	}
}

// startService runs a service with no workers until the test ends and
// returns its URL once the first discovery sync is in.
func startService(t *testing.T, cfg Config, log *slog.Logger) string {
	t.Helper()
	models := startModels(t, startRuntime(t, discovery.NewMemSpace()))
	testenv.WaitFor(t, 5*time.Second, "the first discovery sync", models.Synced)
	return serveModels(t, cfg, log, ServeRegistry(models))
}

// serveModels runs a service over models until the test ends and returns
// its URL.
func serveModels(t *testing.T, cfg Config, log *slog.Logger, models Models) string {
	t.Helper()
	cfg.ShutdownGrace = -1
	svc, err := New(cfg, Deps{Models: models, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln, "", "") }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service Run: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// request makes one request with the given headers.
func request(t *testing.T, method, url, body string, h http.Header) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}
