package loadgen

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
)

// conversations runs the multi-turn workload: cfg.Concurrency workers,
// each holding one conversation at a time and sending its next turn as
// soon as the previous answer ended. A conversation that has sent its
// last turn, or whose turn failed or was refused, is replaced by a new
// one (after a refusal's Retry-After, as closedLoop waits). Turns are
// numbered across conversations in the order they are sent: the first
// cfg.Warmup are warm-up turns, and launching stops after total turns
// or when launchCtx ends.
func (r *runner) conversations(launchCtx, runCtx context.Context, total int, wg *sync.WaitGroup) {
	var nextTurn, nextConv atomic.Int64
	first := r.cfg.firstLen()
	for range r.cfg.Concurrency {
		wg.Go(func() {
			var p pause
			defer p.stop()
			for launchCtx.Err() == nil {
				c := newConversation(int(nextConv.Add(1)-1), r.cfg.Seed, first, r.cfg.TurnLen)
				last, more := r.converse(launchCtx, runCtx, c, &nextTurn, total)
				if !more || !r.honour(launchCtx, &p, last) {
					return
				}
			}
		})
	}
}

// converse sends c's turns until its last, a turn that did not complete,
// or the end of launching, and records how it ended when one of its
// turns was measured. It returns the outcome of the last turn sent, and
// more: false when the run sends no more turns.
func (r *runner) converse(launchCtx, runCtx context.Context, c *conversation, next *atomic.Int64, total int) (last outcome, more bool) {
	end := convUnfinished
	defer func() {
		if c.measured {
			r.col.conversationEnded(end)
		}
	}()
	for c.turn < r.cfg.Turns {
		if launchCtx.Err() != nil {
			return last, false
		}
		n := int(next.Add(1) - 1)
		if total >= 0 && n >= total {
			return last, false
		}
		c.addUser()
		c.measured = c.measured || n >= r.cfg.Warmup
		var answer strings.Builder
		last = r.send(runCtx, n, request{body: r.frame.body(c.msgs), words: c.words, turn: c.turn, answer: &answer})
		switch {
		case last.cancelled:
			return last, false
		case last.err != nil:
			end = convFailed
			return last, true
		}
		c.addAnswer(answer.String())
	}
	end = convFinished
	return last, true
}
