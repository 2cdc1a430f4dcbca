package loadgen

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// promptSource builds the prompt of request number n.
type promptSource interface {
	Prompt(n int) Prompt
}

// Run executes the load test cfg describes and returns its report. It
// blocks until every request it sent has ended. Requests are numbered
// from 0; the first cfg.Warmup are left out of the report. Launching
// stops after cfg.Warmup+cfg.Requests requests or cfg.Duration, whichever
// comes first. When ctx ends, requests in flight are cancelled and the
// partial report (Interrupted set) is returned with a nil error; the
// only errors are configuration errors.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		tr := NewTransport(cfg.conns(), cfg.ConnectTimeout)
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	r := &runner{
		cfg: cfg,
		col: newCollector(cfg.SLOTTFT),
		req: &requester{
			client: client, fresh: oneShotClient(client), endpoint: cfg.endpoint(), api: cfg.API,
			model: cfg.Model, osl: int64(cfg.OSL), timeout: cfg.Timeout, headers: cfg.Headers,
		},
	}
	switch cfg.Workload {
	case WorkloadSharedPrefix:
		r.prompts = NewSharedPrefix(cfg.Groups, cfg.PrefixLen, cfg.SuffixLen, cfg.Seed)
	case WorkloadMultiTurn:
		frame, err := r.req.newChatFrame()
		if err != nil {
			return nil, err
		}
		r.frame = frame
		r.col.byTurn(cfg.Turns)
	default:
		r.prompts = NewSynthetic(cfg.ISL, cfg.Seed)
	}
	return r.run(ctx), nil
}

// runner is the state of one Run.
type runner struct {
	cfg       Config
	prompts   promptSource // not multi-turn
	frame     chatFrame    // multi-turn
	req       *requester
	col       *collector
	throttled int        // open loop only; written by the scheduler goroutine
	watch     *procWatch // nil without WatchPIDs
	measuring sync.Once  // marks the watch's start at the first measured send
}

func (r *runner) run(ctx context.Context) *Report {
	launchCtx, stopLaunching := context.WithCancel(ctx)
	defer stopLaunching()
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		launchCtx, cancel = context.WithTimeout(launchCtx, r.cfg.Duration)
		defer cancel()
	}
	total := -1
	if r.cfg.Requests > 0 {
		total = r.cfg.Warmup + r.cfg.Requests
	}

	if len(r.cfg.WatchPIDs) > 0 {
		r.watch = watchProcesses(r.cfg.WatchPIDs, 200*time.Millisecond)
	}

	var progress sync.WaitGroup
	progressCtx, stopProgress := context.WithCancel(ctx)
	if r.cfg.Logger != nil {
		progress.Go(func() { r.logProgress(progressCtx) })
	}

	var requests sync.WaitGroup
	switch {
	case r.cfg.Workload == WorkloadMultiTurn:
		r.conversations(launchCtx, ctx, total, &requests)
	case r.cfg.Rate > 0:
		r.openLoop(launchCtx, ctx, total, &requests)
	default:
		r.closedLoop(launchCtx, ctx, total, &requests)
	}
	requests.Wait()
	stopProgress()
	progress.Wait()

	rep := r.col.report()
	rep.Processes = r.watch.stop(rep.Completed)
	rep.Label = r.cfg.Label
	rep.Config = r.cfg.record()
	rep.Throttled = r.throttled
	rep.Interrupted = ctx.Err() != nil
	return rep
}

// closedLoop runs cfg.Concurrency workers, each sending its next request
// as soon as the previous one ends, or, after a refusal with
// Retry-After, once that time has passed (unless
// cfg.IgnoreRetryAfter): a client that honours it, as a well-behaved one
// does, rather than a storm of instant retries.
func (r *runner) closedLoop(launchCtx, runCtx context.Context, total int, wg *sync.WaitGroup) {
	var next atomic.Int64
	for range r.cfg.Concurrency {
		wg.Go(func() {
			var p pause
			defer p.stop()
			for launchCtx.Err() == nil {
				n := int(next.Add(1) - 1)
				if total >= 0 && n >= total {
					return
				}
				if !r.honour(launchCtx, &p, r.one(runCtx, n)) {
					return
				}
			}
		})
	}
}

// honour waits out o's Retry-After on p, unless cfg.IgnoreRetryAfter.
// It reports false when launchCtx ended first.
func (r *runner) honour(launchCtx context.Context, p *pause, o outcome) bool {
	if o.retryAfter <= 0 || r.cfg.IgnoreRetryAfter {
		return true
	}
	return p.wait(launchCtx, o.retryAfter)
}

// pause is one closed-loop worker's timer for waiting out Retry-After,
// made on first use.
type pause struct{ t *time.Timer }

// wait waits d and reports true, or false when ctx ends first.
func (p *pause) wait(ctx context.Context, d time.Duration) bool {
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d)
	}
	select {
	case <-p.t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// stop releases the timer.
func (p *pause) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}

// openLoop sends requests at Poisson arrival times, each in its own
// goroutine, regardless of completions. The schedule is absolute: an
// arrival delayed by the MaxInflight cap or by the scheduler falling
// behind is sent as soon as possible and later arrivals keep their times.
func (r *runner) openLoop(launchCtx, runCtx context.Context, total int, wg *sync.WaitGroup) {
	sched := NewPoissonSchedule(r.cfg.Rate, rand.New(rand.NewPCG(r.cfg.Seed, 0x5eed)))
	slots := make(chan struct{}, r.cfg.MaxInflight)
	timer := time.NewTimer(0)
	defer timer.Stop()
	at := time.Now()
	for n := 0; total < 0 || n < total; n++ {
		if n > 0 {
			at = at.Add(sched.Next())
		}
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-launchCtx.Done():
				return
			case <-timer.C:
			}
		} else if launchCtx.Err() != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			r.throttled++
			select {
			case slots <- struct{}{}:
			case <-launchCtx.Done():
				return
			}
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r.one(runCtx, n)
		})
	}
}

// one sends request n and records it unless it is a warmup request. It
// returns the request's outcome.
func (r *runner) one(ctx context.Context, n int) outcome {
	p := r.prompts.Prompt(n)
	body, err := r.req.body(p)
	return r.send(ctx, n, request{body: body, err: err, words: p.Words})
}

// request is one request for send.
type request struct {
	body []byte
	// err is why there is no body; the request fails as KindProtocol.
	err error
	// words is the prompt's length in words.
	words int
	// turn is the request's turn in its conversation, from 1; 0 outside
	// the multi-turn workload.
	turn int
	// answer, when not nil, receives the chat stream's content.
	answer *strings.Builder
}

// send sends request n and records its outcome unless n is a warmup
// request.
func (r *runner) send(ctx context.Context, n int, q request) outcome {
	measured := n >= r.cfg.Warmup
	if measured {
		r.measuring.Do(r.watch.markStart)
		r.col.launch(time.Now())
	}
	var o outcome
	if q.err != nil {
		o.err = &RequestError{Kind: KindProtocol, Err: q.err}
	} else {
		o = r.req.do(ctx, q.body, q.answer)
	}
	if measured {
		r.col.record(o, q.words, q.turn)
	}
	return o
}

// logProgress logs the counts every ProgressEvery until ctx ends.
func (r *runner) logProgress(ctx context.Context) {
	every := r.cfg.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			launched, completed, failed := r.col.progress()
			r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "progress",
				slog.Int("launched", launched), slog.Int("completed", completed), slog.Int("failed", failed))
		}
	}
}
