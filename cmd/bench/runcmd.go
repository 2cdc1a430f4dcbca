package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/internal/loadgen"
)

// runFlags are the flags of "bench run".
type runFlags struct {
	fs                           *flag.FlagSet
	url, model, api, workload    *string
	isl, osl                     *int
	groups, prefixLen, suffixLen *int
	turns, historyLen, turnLen   *int
	concurrency, maxInflight     *int
	rate                         *float64
	requests, warmup             *int
	duration, timeout, connect   *time.Duration
	sloTTFT                      *time.Duration
	seed                         *uint64
	jsonPath, label              *string
	progress                     *time.Duration
	watch                        *string
	ignoreRetryAfter             *bool
	headers                      headerList
}

// headerList is the repeatable --header flag: "Name: value".
type headerList map[string]string

func (h headerList) String() string { return "" }

func (h headerList) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if name = strings.TrimSpace(name); !ok || name == "" {
		return fmt.Errorf("want \"Name: value\", got %q", v)
	}
	h[name] = strings.TrimSpace(value)
	return nil
}

func newRunFlags(stderr io.Writer) *runFlags {
	d := loadgen.DefaultConfig()
	fs := newFlagSet("run", "[flags]", stderr)
	headers := headerList{}
	fs.Var(headers, "header", "a header to send with every request, \"Name: value\" (e.g. a tenant header); repeatable")
	return &runFlags{
		headers:          headers,
		fs:               fs,
		url:              fs.String("url", d.URL, "base URL of the OpenAI-compatible server"),
		model:            fs.String("model", "", "model name to send (required)"),
		api:              fs.String("api", string(d.API), "endpoint: chat (/v1/chat/completions) or completions (/v1/completions)"),
		workload:         fs.String("workload", string(d.Workload), "prompts: synthetic (unique, --isl words), shared-prefix (--groups prefixes of --prefix-len words + unique --suffix-len words) or multi-turn (chat conversations of --turns turns, each re-sending the history with the answers so far; --requests and --warmup count turns)"),
		isl:              fs.Int("isl", d.ISL, "synthetic prompt length in words (≈ tokens: one short common word each)"),
		osl:              fs.Int("osl", d.OSL, "output tokens per request (max_tokens, with ignore_eos)"),
		groups:           fs.Int("groups", d.Groups, "shared-prefix: number of prefix groups"),
		prefixLen:        fs.Int("prefix-len", d.PrefixLen, "shared-prefix: prefix length in words"),
		suffixLen:        fs.Int("suffix-len", d.SuffixLen, "shared-prefix: unique suffix length in words"),
		turns:            fs.Int("turns", d.Turns, "multi-turn: turns per conversation"),
		historyLen:       fs.Int("history-len", d.HistoryLen, "multi-turn: words of a conversation's messages at its last turn, answers counted as --osl words (the first user message carries what the turns do not)"),
		turnLen:          fs.Int("turn-len", d.TurnLen, "multi-turn: words of each new user message (the first has at least as many)"),
		concurrency:      fs.Int("concurrency", d.Concurrency, "closed loop: this many workers, each sending its next request when the last ends (not with --rate); multi-turn: conversations in flight"),
		rate:             fs.Float64("rate", 0, "open loop: Poisson arrivals at this many requests/s (0 = use --concurrency)"),
		maxInflight:      fs.Int("max-inflight", d.MaxInflight, "open loop: cap on outstanding requests; later arrivals wait"),
		requests:         fs.Int("requests", d.Requests, "measured requests, after the warmup (0 = until --duration)"),
		duration:         fs.Duration("duration", 0, "stop sending after this long, e.g. 60s (0 = until --requests)"),
		warmup:           fs.Int("warmup", d.Warmup, "requests sent first and left out of the statistics"),
		timeout:          fs.Duration("timeout", d.Timeout, "per-request limit from send to the end of the stream"),
		sloTTFT:          fs.Duration("slo-ttft", 0, "goodput: count the completed requests whose time to first token is within this, per second (0 = no goodput)"),
		connect:          fs.Duration("connect-timeout", d.ConnectTimeout, "TCP connect limit"),
		seed:             fs.Uint64("seed", d.Seed, "seed of prompts, group choice and arrival times"),
		jsonPath:         fs.String("json", "", "also write the report as JSON to this file (- = stdout, the table then goes to stderr)"),
		label:            fs.String("label", "", "name of this run in the report"),
		progress:         fs.Duration("progress", 5*time.Second, "log progress to stderr this often (0 = never)"),
		watch:            fs.String("watch-pid", "", "comma-separated pids (the server under test) whose peak RSS, peak open files and CPU per request to report (Linux)"),
		ignoreRetryAfter: fs.Bool("ignore-retry-after", false, "closed loop: send the next request at once after a refusal (429/503/529) instead of waiting its Retry-After"),
	}
}

// config builds the loadgen configuration from the parsed flags.
func (f *runFlags) config(log *slog.Logger) (loadgen.Config, error) {
	if isSet(f.fs, "concurrency") && isSet(f.fs, "rate") {
		return loadgen.Config{}, fmt.Errorf("--concurrency and --rate exclude each other: pick a closed or an open loop")
	}
	c := loadgen.DefaultConfig()
	c.URL, c.Model = *f.url, *f.model
	c.API, c.Workload = loadgen.API(*f.api), loadgen.Workload(*f.workload)
	c.ISL, c.OSL = *f.isl, *f.osl
	c.Groups, c.PrefixLen, c.SuffixLen = *f.groups, *f.prefixLen, *f.suffixLen
	c.Turns, c.HistoryLen, c.TurnLen = *f.turns, *f.historyLen, *f.turnLen
	c.Concurrency, c.Rate, c.MaxInflight = *f.concurrency, *f.rate, *f.maxInflight
	c.Requests, c.Duration, c.Warmup = *f.requests, *f.duration, *f.warmup
	c.Timeout, c.ConnectTimeout, c.SLOTTFT = *f.timeout, *f.connect, *f.sloTTFT
	c.Seed, c.Label = *f.seed, *f.label
	c.IgnoreRetryAfter = *f.ignoreRetryAfter
	if len(f.headers) > 0 {
		c.Headers = f.headers
	}
	for _, p := range strings.Split(*f.watch, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			return loadgen.Config{}, fmt.Errorf("--watch-pid %q: want process ids", *f.watch)
		}
		c.WatchPIDs = append(c.WatchPIDs, pid)
	}
	if *f.progress > 0 {
		c.Logger, c.ProgressEvery = log, *f.progress
	}
	return c, c.Validate()
}

// runMain is "bench run": exit 0 when requests completed, 1 when none did
// or the run was interrupted (the partial report is still written), 2 for
// bad flags.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newRunFlags(stderr)
	if code := parseFlags(f.fs, args); code >= 0 {
		return code
	}
	if code := noArgs(f.fs); code >= 0 {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := f.config(log)
	if err != nil {
		fmt.Fprintf(stderr, "bench run: %v\n", err)
		return 2
	}
	rep, err := loadgen.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "bench run: %v\n", err)
		return 2
	}
	table := stdout
	if *f.jsonPath == "-" {
		table = stderr
	}
	if err := rep.WriteTable(table); err != nil {
		fmt.Fprintf(stderr, "bench run: %v\n", err)
		return 1
	}
	if *f.jsonPath != "" {
		if err := writeJSON(*f.jsonPath, rep, stdout); err != nil {
			fmt.Fprintf(stderr, "bench run: %v\n", err)
			return 1
		}
	}
	switch {
	case rep.Interrupted:
		fmt.Fprintln(stderr, "bench run: interrupted")
		return 1
	case rep.Completed == 0:
		fmt.Fprintln(stderr, "bench run: no request completed")
		return 1
	}
	return 0
}

// writeJSON writes rep to path, or to stdout for "-".
func writeJSON(path string, rep *loadgen.Report, stdout io.Writer) error {
	if path == "-" {
		return rep.WriteJSON(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
