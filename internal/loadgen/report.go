package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the result of a run; its JSON form is what cmd/bench writes
// with --json. Latencies are in milliseconds with microsecond precision,
// throughputs per second of the measured window: from the first measured
// request's send to the last measured request's end.
type Report struct {
	// Label names the run (Config.Label).
	Label string `json:"label"`
	// Processes are the watched processes' peak memory, open files and CPU
	// (Config.WatchPIDs).
	Processes []ProcessStats `json:"processes,omitempty"`
	// Config is the run's configuration.
	Config RunConfig `json:"config"`
	// StartedAt is when the first measured request was sent.
	StartedAt time.Time `json:"started_at"`
	// DurationS is the measured window in seconds.
	DurationS float64 `json:"duration_s"`
	// Interrupted is set when the run's context ended early.
	Interrupted bool `json:"interrupted"`

	// Launched measured requests ended as Completed, Refused, Failed or
	// Cancelled (cut short by an interrupted run; not an error). Refused
	// are the server's refusals for want of room: 429, 503 or 529, or
	// another error status with Retry-After; Failed are the other
	// failures.
	Launched  int `json:"launched"`
	Completed int `json:"completed"`
	Refused   int `json:"refused"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// RetriedIdleConn counts the measured requests sent a second time,
	// on a new connection, because the server had closed the reused
	// keep-alive connection of the first attempt before a byte of an
	// answer (net/http's "server closed idle connection", or EOF or a
	// reset there), as when llama-server's keep-alive timeout races the
	// next request. Each is retried once and then counts above by how
	// the retry ended; its times include the failed attempt.
	RetriedIdleConn int `json:"retried_idle_conn"`
	// Errors counts failures by kind; HTTPStatus breaks KindHTTP failures
	// down by status code, RefusedStatus the refusals; ErrorSamples holds
	// up to ten distinct failure messages.
	Errors        map[ErrorKind]int `json:"errors"`
	HTTPStatus    map[string]int    `json:"http_status,omitempty"`
	RefusedStatus map[string]int    `json:"refused_status,omitempty"`
	ErrorSamples  []string          `json:"error_samples,omitempty"`
	// Throttled counts open-loop arrivals that waited for MaxInflight.
	Throttled int `json:"throttled"`
	// UsageMissing counts completed requests without a usage chunk; their
	// output tokens are the content chunks, input tokens the prompt words.
	UsageMissing int `json:"usage_missing"`

	// InputTokens and OutputTokens are the completed requests' tokens:
	// usage.prompt_tokens and usage.completion_tokens when reported.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// ContentChunks counts the completed requests' streamed chunks with
	// generated content: fewer than OutputTokens when a server sends
	// several tokens in a chunk (an engine merges the tokens a lagging
	// consumer has not taken yet).
	ContentChunks int64 `json:"content_chunks"`
	// WithinSLO counts the completed requests whose TTFT was within
	// Config.SLOTTFT, Goodput them per second (both 0 without an SLO).
	WithinSLO int     `json:"within_slo"`
	Goodput   float64 `json:"goodput_rps"`
	// Throughputs of completed requests and their tokens.
	RequestThroughput     float64 `json:"request_throughput_rps"`
	OutputTokenThroughput float64 `json:"output_token_throughput_tps"`
	InputTokenThroughput  float64 `json:"input_token_throughput_tps"`
	// ArrivalRate is the achieved send rate of measured requests.
	ArrivalRate float64 `json:"achieved_arrival_rate_rps"`

	// Times count from just before the request goes to the HTTP client
	// (so a new connection's setup is included). TTFT is that to the
	// first chunk with content; ITL the gaps between
	// successive content chunks; TPOT (e2e − TTFT)/(output tokens − 1) of
	// requests with more than one token; E2E send to [DONE]. Completed
	// requests only.
	TTFT Summary `json:"ttft_ms"`
	ITL  Summary `json:"itl_ms"`
	TPOT Summary `json:"tpot_ms"`
	E2E  Summary `json:"e2e_ms"`
	// Refusal is send to the refusal's answer, of refused requests.
	Refusal Summary `json:"refusal_ms"`
	// RefusalConnect is the part of Refusal spent getting a connection
	// (a kept-alive one, or a new one dialled): time the server's
	// handler never saw.
	RefusalConnect Summary `json:"refusal_connect_ms"`

	// Turns is the multi-turn workload's table by turn number, completed
	// turns only (every request is a turn there, and the counts, times
	// and the processes' CPU per completed request above are per turn).
	Turns []TurnStats `json:"turns,omitempty"`
	// Conversations counts how the multi-turn workload's conversations
	// ended.
	Conversations *ConversationStats `json:"conversations,omitempty"`
}

// RunConfig is the configuration recorded in a report; the fields mirror
// Config's, with durations as strings ("1m0s") and Arrival naming the
// loop: "concurrency" (closed) or "poisson" (open).
type RunConfig struct {
	URL         string   `json:"url"`
	Model       string   `json:"model"`
	API         API      `json:"api"`
	Workload    Workload `json:"workload"`
	ISL         int      `json:"isl,omitempty"`
	OSL         int      `json:"osl"`
	Groups      int      `json:"groups,omitempty"`
	PrefixLen   int      `json:"prefix_len,omitempty"`
	SuffixLen   int      `json:"suffix_len,omitempty"`
	Turns       int      `json:"turns,omitempty"`
	HistoryLen  int      `json:"history_len,omitempty"`
	TurnLen     int      `json:"turn_len,omitempty"`
	FirstLen    int      `json:"first_len,omitempty"` // multi-turn: words of the first user message
	Arrival     string   `json:"arrival"`
	Concurrency int      `json:"concurrency,omitempty"`
	// IgnoreRetryAfter: closed-loop workers retried at once after a
	// refusal.
	IgnoreRetryAfter bool    `json:"ignore_retry_after,omitempty"`
	Rate             float64 `json:"rate,omitempty"`
	MaxInflight      int     `json:"max_inflight,omitempty"`
	Requests         int     `json:"requests"`
	Duration         string  `json:"duration"`
	Warmup           int     `json:"warmup"`
	Timeout          string  `json:"timeout"`
	SLOTTFT          string  `json:"slo_ttft,omitempty"`
	Seed             uint64  `json:"seed"`
}

func (c *Config) record() RunConfig {
	rc := RunConfig{
		URL: c.URL, Model: c.Model, API: c.API, Workload: c.Workload, OSL: c.OSL,
		Requests: c.Requests, Duration: c.Duration.String(), Warmup: c.Warmup,
		Timeout: c.Timeout.String(), Seed: c.Seed,
	}
	if c.SLOTTFT > 0 {
		rc.SLOTTFT = c.SLOTTFT.String()
	}
	switch c.Workload {
	case WorkloadSharedPrefix:
		rc.Groups, rc.PrefixLen, rc.SuffixLen = c.Groups, c.PrefixLen, c.SuffixLen
	case WorkloadMultiTurn:
		rc.Turns, rc.HistoryLen, rc.TurnLen, rc.FirstLen = c.Turns, c.HistoryLen, c.TurnLen, c.firstLen()
	default:
		rc.ISL = c.ISL
	}
	if c.Rate > 0 {
		rc.Arrival, rc.Rate, rc.MaxInflight = "poisson", c.Rate, c.MaxInflight
	} else {
		rc.Arrival, rc.Concurrency, rc.IgnoreRetryAfter = "concurrency", c.Concurrency, c.IgnoreRetryAfter
	}
	return rc
}

// ReadReport decodes a report written as JSON.
func ReadReport(r io.Reader) (*Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("loadgen: read report: %w", err)
	}
	return &rep, nil
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("loadgen: write report: %w", err)
	}
	return nil
}

// WriteTable writes r for people.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	c := r.Config
	if r.Label != "" {
		fmt.Fprintf(&b, "run %q: ", r.Label)
	}
	fmt.Fprintf(&b, "%s %s model=%s %s %s osl=%d ", c.URL, c.API, c.Model, c.Workload, c.shape(), c.OSL)
	if c.Arrival == "poisson" {
		fmt.Fprintf(&b, "poisson rate=%g/s max-inflight=%d\n", c.Rate, c.MaxInflight)
	} else {
		fmt.Fprintf(&b, "concurrency=%d\n", c.Concurrency)
	}
	if r.Interrupted {
		b.WriteString("INTERRUPTED: partial results\n")
	}
	// A multi-turn run's requests are its conversations' turns.
	label, per, rate := "requests:  ", "request", "req/s"
	if c.Workload == WorkloadMultiTurn {
		label, per, rate = "turns:     ", "turn", "turns/s"
	}
	fmt.Fprintf(&b, "%s %d completed, %d refused, %d failed, %d cancelled of %d launched in %.3f s (throttled %d, usage missing %d, retried (idle conn closed) %d)\n",
		label, r.Completed, r.Refused, r.Failed, r.Cancelled, r.Launched, r.DurationS, r.Throttled, r.UsageMissing, r.RetriedIdleConn)
	fmt.Fprintf(&b, "throughput: %.2f %s, %.1f output tok/s, %.1f input tok/s; achieved arrival rate %.2f %s\n",
		r.RequestThroughput, rate, r.OutputTokenThroughput, r.InputTokenThroughput, r.ArrivalRate, rate)
	if r.Completed > 0 {
		fmt.Fprintf(&b, "per %s:  %.2f output tokens in %.2f content chunks\n",
			per, float64(r.OutputTokens)/float64(r.Completed), float64(r.ContentChunks)/float64(r.Completed))
	}
	if c.SLOTTFT != "" {
		fmt.Fprintf(&b, "goodput:    %.2f %s: %d completed with TTFT within %s\n", r.Goodput, rate, r.WithinSLO, c.SLOTTFT)
	}
	if r.Refused > 0 {
		fmt.Fprintf(&b, "refused:    %s; answered in %.3f ms (p50), %.3f ms (p99), %.3f ms (max)\n",
			r.statusLine(), r.Refusal.P50, r.Refusal.P99, r.Refusal.Max)
	}
	if r.Failed > 0 {
		fmt.Fprintf(&b, "errors:     %s\n", r.errorLine())
		for _, s := range r.ErrorSamples {
			fmt.Fprintf(&b, "  e.g. %s\n", s)
		}
	}
	if cs := r.Conversations; cs != nil {
		fmt.Fprintf(&b, "conversations: %d finished all %d turns, %d ended by a failed or refused turn, %d cut short by the end of the run\n",
			cs.Finished, c.Turns, cs.Failed, cs.Unfinished)
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms\tcount\tmean\tp50\tp90\tp99\tmax\t")
	for _, row := range []struct {
		name string
		s    Summary
	}{{"TTFT", r.TTFT}, {"ITL", r.ITL}, {"TPOT", r.TPOT}, {"E2E", r.E2E}} {
		s := row.s
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", row.name, s.Count, s.Mean, s.P50, s.P90, s.P99, s.Max)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Turns) > 0 {
		b.WriteString("\nby turn:\n")
		if err := writeTurns(&b, r.Turns); err != nil {
			return err
		}
	}
	for _, p := range r.Processes {
		if p.Samples == 0 {
			fmt.Fprintf(&b, "process %d (%s): not read: %s\n", p.PID, p.Name, p.Error)
			continue
		}
		fmt.Fprintf(&b, "process %d (%s): peak RSS %.1f MB, peak %d open files, CPU %.2f s, %.3f ms per completed %s",
			p.PID, p.Name, float64(p.PeakRSSBytes)/(1<<20), p.PeakFDs, p.CPUSeconds, p.CPUPerRequestMS, per)
		if c.Arrival != "poisson" && c.Concurrency > 0 {
			fmt.Fprintf(&b, ", %.1f KB RSS per stream at concurrency %d", float64(p.PeakRSSBytes)/1024/float64(c.Concurrency), c.Concurrency)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shape describes the prompt lengths.
func (c RunConfig) shape() string {
	switch c.Workload {
	case WorkloadSharedPrefix:
		return fmt.Sprintf("groups=%d prefix=%d suffix=%d", c.Groups, c.PrefixLen, c.SuffixLen)
	case WorkloadMultiTurn:
		return fmt.Sprintf("turns=%d history-len=%d turn-len=%d (first message %d words)", c.Turns, c.HistoryLen, c.TurnLen, c.FirstLen)
	}
	return fmt.Sprintf("isl=%d", c.ISL)
}

// statusLine lists the refusals by status code, sorted.
func (r *Report) statusLine() string {
	var codes []string
	for s, m := range r.RefusedStatus {
		codes = append(codes, fmt.Sprintf("%s×%d", s, m))
	}
	slices.Sort(codes)
	return strings.Join(codes, " ")
}

// errorLine lists the error counts by kind, sorted, with status codes.
func (r *Report) errorLine() string {
	var parts []string
	for k, n := range r.Errors {
		p := fmt.Sprintf("%s=%d", k, n)
		if k == KindHTTP && len(r.HTTPStatus) > 0 {
			var codes []string
			for s, m := range r.HTTPStatus {
				codes = append(codes, fmt.Sprintf("%s×%d", s, m))
			}
			slices.Sort(codes)
			p += " (" + strings.Join(codes, " ") + ")"
		}
		parts = append(parts, p)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
