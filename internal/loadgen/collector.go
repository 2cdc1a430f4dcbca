package loadgen

import (
	"strconv"
	"sync"
	"time"
)

// maxErrorSamples bounds the distinct error messages a report keeps.
const maxErrorSamples = 10

// collector accumulates the measured (non-warmup) requests of a run. It
// is safe for concurrent use.
type collector struct {
	mu sync.Mutex

	ttft, itl, tpot, e2e, refusal []time.Duration
	refusalConnect                []time.Duration

	slo                                                                 time.Duration // SLOTTFT; 0: no goodput
	launched, completed, good, failed, refused, cancelled, usageMissing int
	retried                                                             int
	inTokens, outTokens, chunks                                         int64
	errors                                                              map[ErrorKind]int
	status, refusedStatus                                               map[int]int
	samples                                                             []string
	firstLaunch, lastLaunch, lastEnd                                    time.Time
	turns                                                               *turnCollector // multi-turn only
}

func newCollector(slo time.Duration) *collector {
	return &collector{slo: slo, errors: map[ErrorKind]int{}, status: map[int]int{}, refusedStatus: map[int]int{}}
}

// launch notes that a measured request was sent at t.
func (c *collector) launch(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.launched == 0 {
		c.firstLaunch = t
	}
	c.launched++
	c.lastLaunch = t
}

// byTurn makes c keep statistics by turn number too, for conversations
// of turns turns (call before the run).
func (c *collector) byTurn(turns int) {
	c.turns = newTurnCollector(turns)
}

// conversationEnded counts a conversation with a measured turn that
// ended as end.
func (c *collector) conversationEnded(end conversationEnd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turns.ended(end)
}

// record adds the outcome of a measured request whose prompt had
// promptWords words; turn is its conversation turn (from 1), or 0.
func (c *collector) record(o outcome, promptWords, turn int) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.lastEnd) {
		c.lastEnd = now
	}
	if o.retried {
		c.retried++
	}
	switch {
	case o.cancelled:
		c.cancelled++
		return
	case o.refused:
		c.refused++
		c.refusedStatus[o.err.Status]++
		c.refusal = append(c.refusal, o.end.Sub(o.start))
		if !o.connected.IsZero() {
			c.refusalConnect = append(c.refusalConnect, o.connected.Sub(o.start))
		}
		return
	case o.err != nil:
		c.failed++
		c.errors[o.err.Kind]++
		if o.err.Kind == KindHTTP {
			c.status[o.err.Status]++
		}
		c.sample(o.err.Error())
		return
	}
	c.completed++
	c.chunks += int64(o.contentCount)
	out, in := o.contentCount, promptWords
	if o.usage != nil {
		out, in = o.usage.CompletionTokens, o.usage.PromptTokens
	} else {
		c.usageMissing++
	}
	c.outTokens += int64(out)
	c.inTokens += int64(in)
	c.turns.record(turn, o, in)
	e2e := o.end.Sub(o.start)
	c.e2e = append(c.e2e, e2e)
	if o.hasContent {
		if o.ttft <= c.slo {
			c.good++
		}
		c.ttft = append(c.ttft, o.ttft)
		c.itl = append(c.itl, o.itl...)
		if out > 1 {
			c.tpot = append(c.tpot, (e2e-o.ttft)/time.Duration(out-1))
		}
	}
}

func (c *collector) sample(msg string) {
	if len(c.samples) >= maxErrorSamples {
		return
	}
	for _, s := range c.samples {
		if s == msg {
			return
		}
	}
	c.samples = append(c.samples, msg)
}

// progress returns the counts so far.
func (c *collector) progress() (launched, completed, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.launched, c.completed, c.failed
}

// report summarises the run. Call it once, after every request ended.
func (c *collector) report() *Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &Report{
		Launched:       c.launched,
		Completed:      c.completed,
		Failed:         c.failed,
		Refused:        c.refused,
		WithinSLO:      c.good,
		Cancelled:      c.cancelled,
		Errors:         map[ErrorKind]int{},
		UsageMissing:   c.usageMissing,
		InputTokens:    c.inTokens,
		OutputTokens:   c.outTokens,
		ContentChunks:  c.chunks,
		ErrorSamples:   c.samples,
		TTFT:           summarize(c.ttft),
		ITL:            summarize(c.itl),
		TPOT:           summarize(c.tpot),
		E2E:            summarize(c.e2e),
		Refusal:        summarize(c.refusal),
		RefusalConnect: summarize(c.refusalConnect),
	}
	for k, n := range c.errors {
		r.Errors[k] = n
	}
	r.HTTPStatus, r.RefusedStatus = byStatus(c.status), byStatus(c.refusedStatus)
	r.Turns, r.Conversations = c.turns.report()
	r.RetriedIdleConn = c.retried
	if c.launched > 0 {
		r.StartedAt = c.firstLaunch
		window := c.lastEnd.Sub(c.firstLaunch).Seconds()
		r.DurationS = round3(window)
		if window > 0 {
			r.RequestThroughput = round3(float64(c.completed) / window)
			if c.slo > 0 {
				r.Goodput = round3(float64(c.good) / window)
			}
			r.OutputTokenThroughput = round3(float64(c.outTokens) / window)
			r.InputTokenThroughput = round3(float64(c.inTokens) / window)
		}
	}
	if span := c.lastLaunch.Sub(c.firstLaunch).Seconds(); c.launched > 1 && span > 0 {
		r.ArrivalRate = round3(float64(c.launched-1) / span)
	}
	return r
}

func round3(x float64) float64 { return roundMicro(x) }

// byStatus keys counts by status code as text; nil when empty.
func byStatus(counts map[int]int) map[string]int {
	if len(counts) == 0 {
		return nil
	}
	out := make(map[string]int, len(counts))
	for s, n := range counts {
		out[strconv.Itoa(s)] = n
	}
	return out
}
