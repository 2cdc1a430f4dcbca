package frontend

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// Config configures the service. The zero value of each field means its
// default, given in its comment; cmd/frontend fills it from flags and
// environment. How models are routed is pipeline.Config's business.
type Config struct {
	// BodyLimit is the largest request body in bytes (default 45 MiB);
	// larger bodies get 413.
	BodyLimit int64
	// ShutdownGrace is how long /health and /live answer 503 while requests
	// are still served, before the server drains (default 5 s; negative
	// means none).
	ShutdownGrace time.Duration
	// DrainTimeout bounds how long in-flight requests may take to finish
	// after the grace period (default 30 s); the rest are killed.
	DrainTimeout time.Duration
	// StreamTimeout is the longest wait for the next item from a worker;
	// on expiry the request is killed with a timeout error. 0 is none.
	StreamTimeout time.Duration
	// BodyReadTimeout bounds reading a request body (default 60 s).
	BodyReadTimeout time.Duration
	// WriteTimeout bounds each write to a client, so a client that stops
	// reading cannot hold a stream forever (default 60 s).
	WriteTimeout time.Duration
	// DetachStreamsAt is how many streams must be in flight (the new one
	// included) for a new stream to take its HTTP/1.1 connection over
	// from net/http (detach.go), which saves about a third of a stream's
	// memory and costs a few tens of microseconds per request: 0 is the
	// default, 64; 1 takes every stream's connection over; a negative
	// value none.
	DetachStreamsAt int
	// OverloadStatus is the status for overload rejections (default 503).
	OverloadStatus int
	// ForceIncludeUsage sends the usage chunk on every stream.
	ForceIncludeUsage bool
	// Decode controls request decoding (unknown fields, nvext).
	Decode openai.DecodeOptions
	// AccessLog writes one info line per HTTP request when it ends, as
	// proxies do (reqlog.go): method, path, status, duration, bytes,
	// client address and, for the /v1 requests, the request id, model
	// and token counts. Off by default.
	AccessLog bool

	// APIKeys, when any are given, are the keys a client must present as
	// "Authorization: Bearer <key>"; other requests get 401 (auth.go).
	// None leaves the API open.
	APIKeys []string
	// AuthExemptPaths are the paths served without a key when APIKeys are
	// given; an entry ending in "*" is a prefix. Nil means /health, /live
	// and /metrics; an empty, non-nil list exempts nothing.
	AuthExemptPaths []string
	// TenantMaxInflight caps each tenant's /v1 requests in flight (queued
	// ones included); a request over it gets 429 with Retry-After, so
	// that one tenant cannot fill the queue. A tenant is the API key
	// (with APIKeys), else the TenantHeader's value; requests with
	// neither are not limited. 0 is off.
	TenantMaxInflight int
	// TenantHeader names a request's tenant when no API keys are
	// configured (default "x-dynamo-tenant").
	TenantHeader string
	// CORSAllowedOrigins are the browser origins (scheme://host[:port],
	// or "*" for any) allowed to call the API from a web page (cors.go).
	// None sends no CORS headers at all.
	CORSAllowedOrigins []string
}

// DefaultAuthExemptPaths are the paths open without a key by default:
// probes and scrapers do not carry one.
var DefaultAuthExemptPaths = []string{"/health", "/live", "/metrics"}

// Validate reports every invalid access-control setting at once. Its
// messages name a bad key by its position, never by its value.
func (c Config) Validate() error {
	var errs []error
	for i, k := range c.APIKeys {
		if err := checkAPIKey(k); err != nil {
			errs = append(errs, fmt.Errorf("frontend: API key %d of %d: %w", i+1, len(c.APIKeys), err))
		}
	}
	for _, p := range c.AuthExemptPaths {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("frontend: exempt path %q: must start with /", p))
		}
	}
	for _, o := range c.CORSAllowedOrigins {
		if _, err := normalizeOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("frontend: CORS origin %q: %w", o, err))
		}
	}
	return errors.Join(errs...)
}

// Deps are the service's collaborators.
type Deps struct {
	// Models are the served models (ServeRegistry of the
	// *pipeline.Registry). Required.
	Models Models
	// Logger receives the service's log lines; nil discards.
	Logger *slog.Logger
	// Registry is served at /metrics; nil makes a new one.
	Registry *prometheus.Registry
	// Metrics records the HTTP layer's metrics; nil makes them, on
	// Registry, with the default MetricsConfig.
	Metrics *Metrics
	// Clock stamps responses; nil is time.Now.
	Clock func() time.Time
	// ResponseStore keeps the Responses API's stored responses
	// (responsestore.File or NATS); nil turns storage off: requests are
	// answered and not kept, and what needs a stored response
	// (previous_response_id, background, GET) is refused.
	ResponseStore ResponseStore
	// TracerProvider makes the server span of each /v1 request, a child
	// of the client's traceparent when it sends one; nil makes none.
	TracerProvider trace.TracerProvider
}

func (c Config) withDefaults() Config {
	if c.BodyLimit == 0 {
		c.BodyLimit = 45 << 20
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 5 * time.Second
	}
	if c.ShutdownGrace < 0 {
		c.ShutdownGrace = 0
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = 60 * time.Second
	}
	if c.DetachStreamsAt == 0 {
		c.DetachStreamsAt = 64
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.OverloadStatus == 0 {
		c.OverloadStatus = 503
	}
	if c.TenantHeader == "" {
		c.TenantHeader = "x-dynamo-tenant"
	}
	if c.AuthExemptPaths == nil {
		c.AuthExemptPaths = DefaultAuthExemptPaths
	}
	return c
}
