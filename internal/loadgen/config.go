package loadgen

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// API selects the endpoint requests go to.
type API string

// The two streamed endpoints.
const (
	APIChat        API = "chat"        // POST /v1/chat/completions
	APICompletions API = "completions" // POST /v1/completions
)

// Workload names how prompts are built.
type Workload string

// The prompt generators.
const (
	// WorkloadSynthetic sends unique prompts of Config.ISL words.
	WorkloadSynthetic Workload = "synthetic"
	// WorkloadSharedPrefix sends a group's fixed prefix plus a unique
	// suffix, the group chosen uniformly at random per request.
	WorkloadSharedPrefix Workload = "shared-prefix"
	// WorkloadMultiTurn sends conversations of Config.Turns turns (chat
	// only): every turn re-sends the whole history, the earlier answers
	// as assistant messages, plus a new user message, as chat clients do
	// (see Config.Turns).
	WorkloadMultiTurn Workload = "multi-turn"
)

// ErrInvalidConfig is matched (errors.Is) by every error Validate returns.
var ErrInvalidConfig = errors.New("loadgen: invalid config")

// Config describes one run. Start from DefaultConfig; the zero value does
// not validate.
type Config struct {
	// URL is the server's base URL ("http://localhost:8000"); a trailing
	// "/v1" is accepted.
	URL string
	// Model is sent as the request's "model".
	Model string
	// API selects chat or completions.
	API API
	// Workload selects the prompt generator.
	Workload Workload
	// ISL is the synthetic prompt length in words (≈ tokens, see
	// NewSynthetic).
	ISL int
	// OSL is max_tokens; requests also set ignore_eos so each generates
	// exactly OSL tokens.
	OSL int
	// Groups, PrefixLen and SuffixLen shape the shared-prefix workload
	// (prefix and suffix in words).
	Groups, PrefixLen, SuffixLen int
	// Turns, HistoryLen and TurnLen shape the multi-turn workload: each
	// conversation has Turns turns, each turn's new user message TurnLen
	// words, and the first user message enough words that the last
	// turn's messages hold about HistoryLen words (answers counted as OSL
	// words): HistoryLen − (Turns−1)·(TurnLen+OSL), at least TurnLen.
	// Concurrency conversations are in flight, each sending its next turn
	// when the previous answer ended and replaced, when it ends, by a new
	// one; Requests and Warmup count turns. A failed or refused turn ends
	// its conversation.
	Turns, HistoryLen, TurnLen int

	// Concurrency is the number of closed-loop workers, each sending its
	// next request when the previous one ends. Used when Rate is 0.
	Concurrency int
	// Rate > 0 selects open-loop Poisson arrivals at Rate requests/s.
	Rate float64
	// MaxInflight caps outstanding requests in open-loop mode; an arrival
	// that finds the cap reached waits for a slot (and is counted in
	// Report.Throttled).
	MaxInflight int
	// IgnoreRetryAfter makes closed-loop workers send their next request
	// at once after a refusal; by default a worker refused with
	// Retry-After waits that long first. (Open-loop arrivals keep their
	// schedule either way.)
	IgnoreRetryAfter bool

	// Requests is the number of measured requests; 0 means no limit
	// (Duration must then be set). Warmup requests come on top.
	Requests int
	// Duration stops launching requests after this long (0 = no limit);
	// requests already sent run to completion.
	Duration time.Duration
	// Warmup requests are sent first and left out of every statistic.
	Warmup int

	// SLOTTFT, when > 0, is the time-to-first-token objective of the
	// goodput: the completed requests whose TTFT is within it, per second
	// (Report.Goodput).
	SLOTTFT time.Duration

	// Timeout bounds one request from send to the end of its stream.
	Timeout time.Duration
	// ConnectTimeout bounds establishing a TCP connection.
	ConnectTimeout time.Duration
	// Seed makes prompts, group choices and arrival times reproducible.
	Seed uint64
	// Label names the run in reports.
	Label string
	// WatchPIDs are processes (the server under test) whose peak memory,
	// peak open files and CPU time per request the report gives (Linux
	// /proc; see ProcessStats).
	WatchPIDs []int

	// Headers are sent with every request (a tenant header, say).
	Headers map[string]string

	// Client sends the requests; nil means a client over NewTransport
	// sized to the concurrency (or MaxInflight). A request the server
	// never received (its pooled connection closed before an answer,
	// Report.RetriedIdleConn) is sent again through a copy of the
	// client's *http.Transport with keep-alives off; with any other
	// RoundTripper it is not retried.
	Client *http.Client
	// Logger receives progress lines every ProgressEvery; nil is silent.
	Logger *slog.Logger
	// ProgressEvery is the progress logging interval (0 = 5s).
	ProgressEvery time.Duration
}

// DefaultConfig returns the defaults cmd/bench starts from.
func DefaultConfig() Config {
	return Config{
		URL:            "http://localhost:8000",
		API:            APIChat,
		Workload:       WorkloadSynthetic,
		ISL:            128,
		OSL:            64,
		Groups:         20,
		PrefixLen:      4000,
		SuffixLen:      1000,
		Turns:          30,
		HistoryLen:     60000,
		TurnLen:        200,
		Concurrency:    8,
		MaxInflight:    2000,
		Requests:       1000,
		Warmup:         10,
		Timeout:        60 * time.Second,
		ConnectTimeout: 10 * time.Second,
		Seed:           1,
	}
}

// Validate reports every problem with c at once; each error matches
// ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		bad("url %q: want http:// or https://", c.URL)
	}
	if c.Model == "" {
		bad("model is required")
	}
	if c.API != APIChat && c.API != APICompletions {
		bad("api %q: want %q or %q", c.API, APIChat, APICompletions)
	}
	switch c.Workload {
	case WorkloadSynthetic:
		if c.ISL < 1 {
			bad("isl %d: want at least 1", c.ISL)
		}
	case WorkloadSharedPrefix:
		if c.Groups < 1 {
			bad("groups %d: want at least 1", c.Groups)
		}
		if c.PrefixLen < 0 {
			bad("prefix-len %d: want 0 or more", c.PrefixLen)
		}
		if c.SuffixLen < 1 {
			bad("suffix-len %d: want at least 1 (it carries the request number)", c.SuffixLen)
		}
	case WorkloadMultiTurn:
		if c.API != APIChat {
			bad("workload %s: api %q: want %q (a conversation is a list of messages)", c.Workload, c.API, APIChat)
		}
		if c.Rate != 0 {
			bad("workload %s: rate %g: conversations run closed loop (each turn is sent when the last answer ended): set concurrency instead", c.Workload, c.Rate)
		}
		if c.Turns < 1 {
			bad("turns %d: want at least 1", c.Turns)
		}
		if c.TurnLen < 1 {
			bad("turn-len %d: want at least 1", c.TurnLen)
		}
		if c.HistoryLen < 0 {
			bad("history-len %d: want 0 or more", c.HistoryLen)
		}
	default:
		bad("workload %q: want %q, %q or %q", c.Workload, WorkloadSynthetic, WorkloadSharedPrefix, WorkloadMultiTurn)
	}
	if c.OSL < 1 {
		bad("osl %d: want at least 1", c.OSL)
	}
	if c.Rate < 0 {
		bad("rate %g: want 0 (closed loop) or more", c.Rate)
	}
	if c.Rate == 0 && c.Concurrency < 1 {
		bad("concurrency %d: want at least 1", c.Concurrency)
	}
	if c.Rate > 0 && c.MaxInflight < 1 {
		bad("max-inflight %d: want at least 1", c.MaxInflight)
	}
	if c.Requests < 0 || c.Warmup < 0 || c.Duration < 0 {
		bad("requests, warmup and duration must not be negative")
	}
	if c.Requests == 0 && c.Duration == 0 {
		bad("set requests or duration (or both)")
	}
	if c.SLOTTFT < 0 {
		bad("slo-ttft %v: want 0 (no goodput) or more", c.SLOTTFT)
	}
	if c.Timeout <= 0 || c.ConnectTimeout <= 0 {
		bad("timeouts must be positive")
	}
	return errors.Join(errs...)
}

// endpoint returns the full URL of the configured API.
func (c *Config) endpoint() string {
	base := strings.TrimSuffix(strings.TrimRight(c.URL, "/"), "/v1")
	if c.API == APICompletions {
		return base + "/v1/completions"
	}
	return base + "/v1/chat/completions"
}

// firstLen is the word count of a conversation's first user message in
// the multi-turn workload.
func (c *Config) firstLen() int {
	return max(c.TurnLen, c.HistoryLen-(c.Turns-1)*(c.TurnLen+c.OSL))
}

// conns is the number of connections the run can use at once.
func (c *Config) conns() int {
	if c.Rate > 0 {
		return c.MaxInflight
	}
	return c.Concurrency
}
