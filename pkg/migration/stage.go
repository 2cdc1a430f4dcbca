package migration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// ErrStopped is returned when a retry would start after the request was
// stopped or killed.
var ErrStopped = errors.New("migration: request is stopped or killed")

// Config configures the stage for one model.
type Config struct {
	// Model labels the metrics and log lines.
	Model string
	// Limit is how many times a request may move to another worker; 0
	// disables migration.
	Limit int
	// MaxSeqLen, when > 0, is the longest sequence (prompt + generated)
	// a migration may re-issue; longer requests are not migrated.
	MaxSeqLen int
	// Metrics receives the migration counters; nil records nothing.
	Metrics *Metrics
	// Logger receives the migration log lines; nil discards.
	Logger *slog.Logger
	// TracerProvider makes a span per attempt of a migratable request,
	// each linked to the one before; nil makes none.
	TracerProvider trace.TracerProvider
}

// Stage is the migration stage of one model's pipeline: it wraps the next
// stage (the KV router or the push router).
type Stage struct {
	next   backend.Generator
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
}

var _ backend.Generator = (*Stage)(nil)

// New returns the stage in front of next.
func New(next backend.Generator, cfg Config) *Stage {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Stage{next: next, cfg: cfg, log: log, tracer: telemetry.Tracer(cfg.TracerProvider, "github.com/dynamo-go/dynamo/pkg/migration")}
}

// Limit returns the configured migration limit.
func (s *Stage) Limit() int { return s.cfg.Limit }

// effectiveLimit is the retries this request may use: 0 for guided
// decoding, n > 1, a pinned worker, or a prompt already over MaxSeqLen.
func (s *Stage) effectiveLimit(ctx context.Context, req *backend.Request) int {
	limit := s.cfg.Limit
	if limit == 0 {
		return 0
	}
	so, rt := req.SamplingOptions, req.Routing
	switch {
	case len(so.GuidedDecoding) > 0 && string(so.GuidedDecoding) != "null":
		s.log.DebugContext(ctx, "migration: off for a request with guided decoding", "model", s.cfg.Model)
		return 0
	case so.N != nil && *so.N > 1:
		return 0
	case rt != nil && (rt.BackendInstanceID != nil || rt.PrefillWorkerID != nil || rt.DecodeWorkerID != nil):
		return 0
	case s.cfg.MaxSeqLen > 0 && len(req.TokenIDs) > s.cfg.MaxSeqLen:
		s.cfg.Metrics.maxSeqLenExceeded(s.cfg.Model)
		return 0
	}
	return limit
}

// Generate runs the request, re-issuing it on another worker when its
// worker fails, within the request's migration budget.
func (s *Stage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	parent, ok := runtime.FromContext(ctx)
	limit := s.effectiveLimit(ctx, req)
	if !ok || limit == 0 {
		err := s.next.Generate(ctx, req, emit)
		if Migratable(err) {
			s.log.WarnContext(ctx, "migration: Cannot recreate stream: migration is off for this request", "model", s.cfg.Model,
				"limit", s.cfg.Limit, "err", err)
		}
		return err
	}
	a := &attempt{s: s, ctx: ctx, parent: parent, req: cloneRequest(req), retries: limit + 1, emit: emit}
	return a.run()
}

// attempt is one request's migration state.
type attempt struct {
	s       *Stage
	ctx     context.Context // the request's context, with the caller's values
	parent  *runtime.Context
	req     *backend.Request // the request as the next attempt will send it
	retries int              // attempts left, the current one included
	emit    func(*backend.Output) error

	finished  bool      // a terminal output reached the client
	emitted   int       // outputs forwarded by the current attempt
	failedAt  time.Time // when the previous attempt failed (zero: none)
	failKind  string    // its migration_type
	generated int       // tokens generated over all attempts
	streamErr error     // the latest mid-stream failure: what the client gets if no retry works
	number    int       // attempts started
	prevSpan  trace.SpanContext
}

func (a *attempt) run() error {
	for {
		a.retries--
		if a.parent.IsStopped() {
			if !a.failedAt.IsZero() {
				a.s.cfg.Metrics.migrationDone(a.s.cfg.Model, a.failKind, outcomeCancelled, time.Since(a.failedAt))
			}
			return fmt.Errorf("%w: context id %s", ErrStopped, a.parent.ID())
		}
		// The child sees the caller's context values (trace data) and
		// ends with it; stop and kill reach it through the link.
		err := a.once()
		if err == nil || a.finished {
			return nil // a terminal output reached the client: nothing is lost
		}
		// A worker that refused the re-issue of a broken stream before it
		// started (full, or too slow to accept it) is busy, not gone:
		// the answer goes on elsewhere. (A first attempt it refuses goes
		// back to the admission queue, which cannot take a request whose
		// client already has part of its answer.)
		refused := a.generated > 0 && a.emitted == 0 && overloaded(err)
		if (!Migratable(err) && !refused) || a.parent.IsStopped() {
			return a.giveUp(err, false)
		}
		kind := TypeOngoing
		if a.emitted == 0 && (isConnectFailure(err) || refused) {
			kind = TypeNewRequest
		}
		// Every failed attempt counts, the last one too (spec §4.5).
		a.s.cfg.Metrics.migration(a.s.cfg.Model, kind)
		if a.retries <= 0 {
			return a.giveUp(err, true)
		}
		if maxTokensReached(a.req) {
			// Every requested token was generated: end as the engine would.
			return a.emit(backend.Length())
		}
		if !a.failedAt.IsZero() {
			a.s.cfg.Metrics.migrationDone(a.s.cfg.Model, a.failKind, outcomeFailure, time.Since(a.failedAt))
		}
		a.failedAt, a.failKind = time.Now(), kind
		if a.emitted > 0 {
			// A stream that broke mid-answer: what the client gets if no
			// retry works (a retry that never produced a token does not
			// replace it).
			a.streamErr = err
		}
		if refused && !a.pause() {
			return a.giveUp(context.Cause(a.ctx), false)
		}
		if kind == TypeNewRequest {
			a.s.log.WarnContext(a.ctx, "migration: Creating new stream... retrying...", "model", a.s.cfg.Model, "request_id", a.parent.ID(), "retries_left", a.retries, "err", err)
		} else {
			a.s.log.WarnContext(a.ctx, "migration: Stream disconnected... recreating stream...", "model", a.s.cfg.Model, "request_id", a.parent.ID(),
				"generated", a.generated, "retries_left", a.retries, "err", err)
		}
	}
}

// refusalPause is how long a re-issue that a worker refused waits before
// the next attempt, so that the router sees the refusal (it counts the
// worker busy for a second) and picks another worker.
const refusalPause = 100 * time.Millisecond

// pause waits refusalPause; false when the request's context ended.
func (a *attempt) pause() bool {
	t := time.NewTimer(refusalPause)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a.ctx.Done():
		return false
	}
}

// once runs one attempt, under its span: a child of the request's, linked
// to the previous attempt's. The request carries the link to the engine
// span of the worker that served the previous attempt (MigrationLink,
// from that worker's first output).
func (a *attempt) once() error {
	a.number++
	opts := []trace.SpanStartOption{trace.WithAttributes(attribute.Int("migration.attempt", a.number))}
	if a.prevSpan.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: a.prevSpan}),
			trace.WithAttributes(attribute.String("migration.type", a.failKind), attribute.Int("migration.replayed_tokens", a.generated)))
	}
	if a.number > 1 {
		countMigration(a.ctx)
	}
	ctx, span := a.s.tracer.Start(a.ctx, "migration.attempt", opts...)
	defer span.End()
	a.prevSpan = span.SpanContext()
	child := runtime.NewContext(ctx, a.parent.ID())
	defer child.Release()
	a.parent.LinkChild(child)
	a.emitted = 0
	err := a.s.next.Generate(child, a.req, a.track)
	if err != nil && !a.finished {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// giveUp ends a request that will not migrate again. After a stream
// broke mid-answer, the client gets that failure (the original error),
// not the error of a retry that could not start (spec §4.3).
func (a *attempt) giveUp(err error, exhausted bool) error {
	if !a.failedAt.IsZero() {
		outcome := outcomeFailure
		if a.parent.IsStopped() {
			outcome = outcomeCancelled
		}
		a.s.cfg.Metrics.migrationDone(a.s.cfg.Model, a.failKind, outcome, time.Since(a.failedAt))
	}
	migrated := a.streamErr != nil || !a.failedAt.IsZero()
	switch {
	case exhausted:
		a.s.log.ErrorContext(a.ctx, "migration: Cannot recreate stream: Migration limit exhausted", "model", a.s.cfg.Model, "request_id", a.parent.ID(),
			"generated", a.generated, "err", err)
	case migrated && !a.parent.IsStopped():
		a.s.log.ErrorContext(a.ctx, "migration: Cannot recreate stream: "+err.Error(), "model", a.s.cfg.Model, "request_id", a.parent.ID(),
			"generated", a.generated)
	}
	if a.streamErr != nil {
		return a.streamErr
	}
	return err
}

// track forwards one output and records its tokens for a re-issue.
func (a *attempt) track(out *backend.Output) error {
	if a.emitted == 0 && !a.failedAt.IsZero() && len(out.TokenIDs) > 0 {
		a.s.cfg.Metrics.migrationDone(a.s.cfg.Model, a.failKind, outcomeSuccess, time.Since(a.failedAt))
		a.s.log.InfoContext(a.ctx, "migration: stream recreated", "model", a.s.cfg.Model, "request_id", a.parent.ID(), "after", time.Since(a.failedAt).Round(time.Microsecond))
		a.failedAt = time.Time{}
	}
	a.emitted++
	if out.WorkerTraceLink != nil {
		a.req.MigrationLink = out.WorkerTraceLink
	}
	if n := len(out.TokenIDs); n > 0 {
		a.generated += n
		if a.retries > 0 {
			a.advance(out.TokenIDs)
		}
	}
	if out.IsTerminal() {
		a.finished = true
	}
	return a.emit(out)
}

// advance appends generated ids to the request and lowers its budgets.
func (a *attempt) advance(ids []uint32) {
	if m := a.s.cfg.MaxSeqLen; m > 0 && len(a.req.TokenIDs)+len(ids) > m {
		a.retries = 0 // too long to replay: no more migrations
		a.s.cfg.Metrics.maxSeqLenExceeded(a.s.cfg.Model)
		a.s.log.InfoContext(a.ctx, "migration: sequence over --migration-max-seq-len; no further migration", "model", a.s.cfg.Model,
			"request_id", a.parent.ID(), "max_seq_len", m)
		return
	}
	a.req.TokenIDs = append(a.req.TokenIDs, ids...)
	a.req.MigratedTokens += len(ids)
	sc := &a.req.StopConditions
	if sc.MaxTokens != nil {
		*sc.MaxTokens = subSat(*sc.MaxTokens, len(ids))
	}
	if sc.MinTokens != nil {
		*sc.MinTokens = subSat(*sc.MinTokens, len(ids))
	}
}

// maxTokensReached reports whether req asks for no more tokens.
func maxTokensReached(req *backend.Request) bool {
	return req.StopConditions.MaxTokens != nil && *req.StopConditions.MaxTokens == 0
}

func subSat(v uint32, n int) uint32 {
	if uint64(n) >= uint64(v) {
		return 0
	}
	return v - uint32(n)
}

// cloneRequest copies the parts of req the stage changes.
func cloneRequest(req *backend.Request) *backend.Request {
	r := *req
	r.TokenIDs = append(make([]uint32, 0, len(req.TokenIDs)+64), req.TokenIDs...)
	if req.StopConditions.MaxTokens != nil {
		r.StopConditions.MaxTokens = backend.Ptr(*req.StopConditions.MaxTokens)
	}
	if req.StopConditions.MinTokens != nil {
		r.StopConditions.MinTokens = backend.Ptr(*req.StopConditions.MinTokens)
	}
	return &r
}
