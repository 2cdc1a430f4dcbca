package prefill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// handoff is one request's way through a remote prefill.
type handoff struct {
	s      *Stage
	ctx    context.Context // the request's, with the caller's values
	parent *runtime.Context
	pool   Pool
	req    *backend.Request
	emit   func(*backend.Output) error
}

// run prefills the request on a prefill worker, retrying on another one
// when the worker fails (at most Config.Retries times; a request pinned
// to a prefill worker is not retried), and decodes it; when no prefill
// works it falls back to decode-only, or fails with Config.Enforce. A
// request stopped during its prefill ends without a decode request.
func (h *handoff) run() error {
	attempts := 1 + max(0, h.s.cfg.Retries)
	if rt := h.req.Routing; rt != nil && rt.PrefillWorkerID != nil {
		attempts = 1
	}
	var err error
	for n := 1; n <= attempts; n++ {
		var answered bool
		answered, err = h.attempt(n)
		if answered {
			return err
		}
		if h.parent.IsStopped() {
			return ErrStopped
		}
		if !runtime.IsInstanceFault(err) || n == attempts {
			break
		}
		h.s.log.InfoContext(h.ctx, "prefill: the prefill worker failed; retrying on another prefill worker", "model", h.s.cfg.Model,
			"request_id", h.parent.ID(), "attempt", n, "err", err)
	}
	return h.fallback(err)
}

// fallback decodes the request without a remote prefill, after its
// prefill failed with err (or fails it, when disaggregation is enforced).
func (h *handoff) fallback(err error) error {
	if h.s.cfg.Enforce {
		h.s.cfg.Metrics.decision(h.s.cfg.Model, DecisionRefused)
		h.s.log.WarnContext(h.ctx, "prefill: the prefill failed and disaggregation is enforced; the request fails", "model", h.s.cfg.Model,
			"request_id", h.parent.ID(), "err", err)
		if runtime.IsInstanceFault(err) {
			// Not the migration stage's to retry: the prefill retries
			// are spent.
			return fmt.Errorf("%w (the last: %v)", ErrPrefillFailed, err)
		}
		return err
	}
	h.s.cfg.Metrics.decision(h.s.cfg.Model, DecisionFallback)
	h.s.log.WarnContext(h.ctx, "prefill: the prefill failed; the decode worker prefills (decode-only)", "model", h.s.cfg.Model,
		"request_id", h.parent.ID(), "err", err)
	return h.s.next.Generate(telemetry.WithAttributes(h.ctx, attrDecision.String(DecisionFallback)), h.req, h.emit)
}

// attempt runs one prefill and, if it worked, the decode. answered
// reports that the request went to the decode workers: err is then the
// request's outcome; otherwise err is why the prefill failed.
func (h *handoff) attempt(n int) (answered bool, err error) {
	preq := prefillRequest(h.req)
	var chosen *backend.Placement
	if id := preq.Routing.BackendInstanceID; id != nil {
		chosen = &backend.Placement{WorkerID: *id, DPRank: preq.Routing.DPRank}
	} else if h.anyBootstrap() {
		// The bootstrap handoff names the prefill worker in the decode
		// request: choose it first, without booking its load.
		if chosen, err = h.pool.Pick(preq); err != nil {
			return false, err
		}
		preq.Routing.BackendInstanceID, preq.Routing.DPRank = &chosen.WorkerID, chosen.DPRank
	}
	style := handoffSync
	var host string
	var port int
	if chosen != nil {
		var ok bool
		if host, port, ok = h.pool.Bootstrap(chosen.WorkerID); ok {
			style = handoffBootstrap
		}
	}
	ctx, span := h.s.tracer.Start(h.ctx, "prefill", trace.WithAttributes(attrHandoff.String(style), attrAttempts.Int(n)))
	if style == handoffBootstrap {
		return h.bootstrap(ctx, span, preq, chosen, host, port)
	}
	return h.sync(ctx, span, preq)
}

// anyBootstrap reports whether any available prefill worker listens for
// the bootstrap handoff.
func (h *handoff) anyBootstrap() bool {
	for _, id := range h.pool.Available() {
		if _, _, ok := h.pool.Bootstrap(id); ok {
			return true
		}
	}
	return false
}

// sync is the synchronous handoff: wait for the prefill's output, then
// send the decode request with its disaggregated_params and a link to the
// prefill's engine span.
func (h *handoff) sync(ctx context.Context, span trace.Span, preq *backend.Request) (bool, error) {
	child := runtime.NewContext(ctx, h.parent.ID())
	defer child.Release()
	h.parent.LinkChild(child)
	var first *backend.Output
	err := h.pool.Generate(child, preq, func(out *backend.Output) error {
		if first == nil {
			first = new(*out) // out is the router's again once emit returns
		}
		return nil
	})
	if err == nil {
		err = checkPrefill(first)
	}
	if err == nil && len(first.DisaggregatedParams) == 0 || err == nil && string(first.DisaggregatedParams) == "null" {
		err = ErrNoDisaggregatedParams
	}
	if err == nil && h.parent.IsStopped() {
		err = ErrStopped
	}
	if first != nil && first.Placement != nil {
		span.SetAttributes(attrWorker.String(fmt.Sprintf("%x", first.Placement.WorkerID)))
	}
	if err != nil {
		endSpan(span, err, h.parent)
		return false, err
	}
	span.SetAttributes(attrOutcome.String("done"))
	span.End()
	placement := first.Placement
	if placement == nil {
		placement = &backend.Placement{}
	}
	dreq, err := h.s.decodeRequest(h.req, placement)
	if err != nil {
		return true, err
	}
	dreq.PrefillResult = &backend.PrefillResult{DisaggregatedParams: first.DisaggregatedParams}
	if u := first.CompletionUsage; u != nil && u.PromptTokensDetails != nil {
		dreq.PrefillResult.PromptTokensDetails, _ = json.Marshal(u.PromptTokensDetails)
	}
	dreq.MigrationLink = first.WorkerTraceLink
	h.s.cfg.Metrics.decision(h.s.cfg.Model, DecisionRemote)
	return true, h.s.next.Generate(telemetry.WithAttributes(h.ctx, attrDecision.String(DecisionRemote)), dreq, stamp(h.emit, placement))
}

// bootstrap is the bootstrap handoff: the prefill runs in the background
// on the chosen worker while the decode request, carrying the same room,
// goes out at once; the decode worker meets the prefill worker at its
// bootstrap address. If the prefill fails before the decode worker
// answered, the decode sub-request is killed and the attempt counts as a
// failed prefill. The background prefill belongs to the request: it has
// returned when bootstrap returns.
func (h *handoff) bootstrap(ctx context.Context, span trace.Span, preq *backend.Request, chosen *backend.Placement, host string, port int) (bool, error) {
	info := &backend.BootstrapInfo{Host: host, Port: port, Room: rand.Uint64()}
	preq.BootstrapInfo = info
	preq.Routing.PrefillWorkerID, preq.Routing.PrefillDPRank = &chosen.WorkerID, chosen.DPRank
	span.SetAttributes(attrWorker.String(fmt.Sprintf("%x", chosen.WorkerID)))
	dreq, err := h.s.decodeRequest(h.req, chosen)
	if err != nil {
		span.End()
		return true, err
	}
	dreq.BootstrapInfo = info
	// The prefill worker has not answered yet: the decode links to this
	// prefill span (the parent of the prefill worker's spans) instead of
	// the prefill's engine span.
	dreq.MigrationLink = telemetry.LinkOf(span.SpanContext())

	pchild := runtime.NewContext(ctx, h.parent.ID())
	defer pchild.Release()
	h.parent.LinkChild(pchild)
	dchild := runtime.NewContext(h.ctx, h.parent.ID())
	defer dchild.Release()
	h.parent.LinkChild(dchild)

	var mu sync.Mutex
	committed, aborted := false, false // the decode answered; the decode was aborted
	pdone := make(chan error, 1)
	go func() {
		var first *backend.Output
		err := h.pool.Generate(pchild, preq, func(out *backend.Output) error {
			if first == nil {
				first = new(*out) // out is the router's again once emit returns
			}
			return nil
		})
		if err == nil {
			err = checkPrefill(first)
		}
		if err != nil {
			mu.Lock()
			if !committed {
				aborted = true
				dchild.Kill()
			}
			mu.Unlock()
			endSpan(span, err, h.parent)
		} else {
			span.SetAttributes(attrOutcome.String("done"))
			span.End()
		}
		pdone <- err
	}()
	derr := h.s.next.Generate(telemetry.WithAttributes(dchild, attrDecision.String(DecisionRemote)), dreq, stamp(func(out *backend.Output) error {
		mu.Lock()
		if aborted {
			mu.Unlock()
			return errDecodeAborted
		}
		committed = true
		mu.Unlock()
		return h.emit(out)
	}, chosen))
	mu.Lock()
	wasAborted, wasCommitted := aborted, committed
	mu.Unlock()
	if wasAborted {
		return false, <-pdone
	}
	if derr != nil && !wasCommitted && !h.parent.IsStopped() {
		// The decode failed before it answered: if the prefill failed too
		// (a prefill worker that went away closes its rooms, and the
		// decode worker gives up on the handoff first), the prefill is the
		// cause, and the attempt counts as a failed prefill.
		select {
		case perr := <-pdone:
			if perr != nil {
				return false, perr
			}
			return true, derr
		case <-time.After(prefillVerdictWait):
		}
	}
	if derr != nil {
		pchild.Kill() // nobody will take the prefill's cache over
	}
	if perr := <-pdone; perr != nil && derr == nil {
		h.s.log.DebugContext(h.ctx, "prefill: the background prefill failed after the decode worker answered", "model", h.s.cfg.Model,
			"request_id", h.parent.ID(), "err", perr)
	}
	if derr == nil || !h.parent.IsStopped() {
		h.s.cfg.Metrics.decision(h.s.cfg.Model, DecisionRemote)
	}
	return true, derr
}

// prefillVerdictWait is how long a bootstrap handoff whose decode failed
// before answering waits for the prefill's own outcome, to tell a failed
// prefill (retried, then decode-only) from a failed decode.
const prefillVerdictWait = time.Second

// checkPrefill turns a prefill stream's first output into an error when
// it is missing or failed.
func checkPrefill(first *backend.Output) error {
	switch {
	case first == nil:
		return errPrefillEnded
	case first.FinishReason != nil && first.FinishReason.Kind == backend.FinishError:
		return fmt.Errorf("prefill: the prefill worker failed: %s", first.FinishReason.Message)
	case first.FinishReason != nil && first.FinishReason.Kind == backend.FinishCancelled:
		return ErrStopped
	}
	return nil
}

// endSpan ends a failed prefill's span.
func endSpan(span trace.Span, err error, parent *runtime.Context) {
	outcome := "failed"
	if parent.IsStopped() || errors.Is(err, ErrStopped) {
		outcome = "cancelled"
	}
	span.SetAttributes(attrOutcome.String(outcome))
	span.SetStatus(codes.Error, err.Error())
	span.End()
}

// stamp returns an emit that adds the prefill worker to the decode
// outputs' placements.
func stamp(emit func(*backend.Output) error, prefill *backend.Placement) func(*backend.Output) error {
	var last, stamped *backend.Placement
	return func(out *backend.Output) error {
		if out.Placement != nil {
			if out.Placement != last {
				last = out.Placement
				c := *last
				c.PrefillWorkerID, c.PrefillDPRank = &prefill.WorkerID, prefill.DPRank
				stamped = &c
			}
			out.Placement = stamped
		}
		return emit(out)
	}
}
