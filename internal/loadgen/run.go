package loadgen

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
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
	var prompts promptSource = NewSynthetic(cfg.ISL, cfg.Seed)
	if cfg.Workload == WorkloadSharedPrefix {
		prompts = NewSharedPrefix(cfg.Groups, cfg.PrefixLen, cfg.SuffixLen, cfg.Seed)
	}
	r := &runner{
		cfg:     cfg,
		prompts: prompts,
		col:     newCollector(cfg.SLOTTFT),
		req: &requester{
			client: client, fresh: oneShotClient(client), endpoint: cfg.endpoint(), api: cfg.API,
			model: cfg.Model, osl: int64(cfg.OSL), timeout: cfg.Timeout, headers: cfg.Headers,
		},
	}
	return r.run(ctx), nil
}

// runner is the state of one Run.
type runner struct {
	cfg       Config
	prompts   promptSource
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
	if r.cfg.Rate > 0 {
		r.openLoop(launchCtx, ctx, total, &requests)
	} else {
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
			var wait *time.Timer
			for launchCtx.Err() == nil {
				n := int(next.Add(1) - 1)
				if total >= 0 && n >= total {
					return
				}
				o := r.one(runCtx, n)
				if o.retryAfter <= 0 || r.cfg.IgnoreRetryAfter {
					continue
				}
				if wait == nil {
					wait = time.NewTimer(o.retryAfter)
					defer wait.Stop()
				} else {
					wait.Reset(o.retryAfter)
				}
				select {
				case <-wait.C:
				case <-launchCtx.Done():
					return
				}
			}
		})
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
	measured := n >= r.cfg.Warmup
	if measured {
		r.measuring.Do(r.watch.markStart)
		r.col.launch(time.Now())
	}
	var o outcome
	if err != nil {
		o.err = &RequestError{Kind: KindProtocol, Err: err}
	} else {
		o = r.req.do(ctx, body)
	}
	if measured {
		r.col.record(o, p.Words)
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
