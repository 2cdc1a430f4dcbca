package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-chi/chi/v5"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// backgroundRuns are the background responses running on this frontend.
// Service.Run owns them: it opens them when it starts serving; once it
// has drained the HTTP requests it closes them, waits for the runs up
// to the drain timeout, kills the rest and waits for them to end. A run
// holds a context of the service's (values, not cancellation), never
// its client's.
type backgroundRuns struct {
	mu   sync.Mutex
	base context.Context // nil while closed
	runs map[string]*backgroundRun
	wg   sync.WaitGroup
}

// backgroundRun is one running background response.
type backgroundRun struct {
	rc        *runtime.Context
	cancelled atomic.Bool // by POST /v1/responses/{id}/cancel or DELETE
	shutdown  atomic.Bool // by the service's shutdown
	done      chan struct{}
}

// open accepts runs, under ctx's values.
func (b *backgroundRuns) open(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.base = context.WithoutCancel(ctx)
}

// start runs fn on a goroutine of its own as the run of response id, with
// the request context of request reqID; false when closed.
func (b *backgroundRuns) start(id, reqID string, fn func(run *backgroundRun)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.base == nil {
		return false
	}
	run := &backgroundRun{rc: runtime.NewContext(b.base, reqID), done: make(chan struct{})}
	if b.runs == nil {
		b.runs = map[string]*backgroundRun{}
	}
	b.runs[id] = run
	b.wg.Go(func() {
		defer func() {
			b.mu.Lock()
			delete(b.runs, id)
			b.mu.Unlock()
			run.rc.Release()
			close(run.done)
		}()
		fn(run)
	})
	return true
}

// cancel kills the run of response id, if it runs here, and waits for it
// to end (its end stored). It reports whether it ran here.
func (b *backgroundRuns) cancel(id string) bool {
	b.mu.Lock()
	run := b.runs[id]
	b.mu.Unlock()
	if run == nil {
		return false
	}
	run.cancelled.Store(true)
	run.rc.Kill()
	<-run.done
	return true
}

// close refuses new runs, waits for the running ones until ctx ends, then
// kills the rest and waits for them.
func (b *backgroundRuns) close(ctx context.Context) {
	b.mu.Lock()
	b.base = nil
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	b.mu.Lock()
	for _, run := range b.runs {
		run.shutdown.Store(true)
		run.rc.Kill()
	}
	b.mu.Unlock()
	<-done
}

// startBackground answers a background request at once with its response,
// queued and stored, and runs it on. A store that cannot take the queued
// response refuses the request (503): it could never be polled.
func (s *Service) startBackground(w http.ResponseWriter, r *http.Request, id string, x *responsesRequest, m ServedModel) apiError {
	resp := openai.NewResponseBuilder(id, x.req, m.Name(), s.clock()).Response()
	resp.Status = openai.ResponseQueued
	if err := s.putResponse(r.Context(), resp, x.turn, 0); err != nil {
		return s.refuse(w, r, id, m.Name(), EndpointResponses, false, s.storeFailure(storeOpPut, resp.ID, "", err))
	}
	started := s.background.start(resp.ID, id, func(run *backgroundRun) { s.runBackground(run, id, x, m, *resp) })
	if !started {
		return s.refuse(w, r, id, m.Name(), EndpointResponses, false, ErrNotReady)
	}
	writeJSON(w, http.StatusOK, resp)
	return apiError{}
}

// runBackground runs a background response and stores how it ends:
// completed or incomplete as a foreground answer would, cancelled, or
// failed with the error.
func (s *Service) runBackground(run *backgroundRun, id string, x *responsesRequest, m ServedModel, queued openai.Response) {
	g := s.metrics.Start(m.Name(), EndpointResponses, false)
	defer g.Finish()
	queued.Status = openai.ResponseInProgress
	x.ctx, x.id = run.rc, id
	x.stored(&queued)
	emit, result := x.fold()
	err := x.run(run.rc, m, id, emit)
	if err == nil {
		result() // stores the answer
		g.OK()
		return
	}
	resp := x.b.Response()
	switch e := s.classify(err); {
	case run.cancelled.Load():
		resp.Status = openai.ResponseCancelled
		g.Cancelled()
	case run.shutdown.Load():
		resp.Status, resp.Error = openai.ResponseFailed, &openai.ResponseError{Code: "server_error", Message: "The server shut down before the response completed."}
		g.Fail(ErrUnavailable)
	default:
		resp.Status, resp.Error = openai.ResponseFailed, &openai.ResponseError{Code: "server_error", Message: e.message}
		g.Fail(e.kind)
		s.log.WarnContext(run.rc, "frontend: background response failed", "request_id", id, "response_id", resp.ID, "error", e.message)
	}
	x.stored(resp)
}

// handleCancelResponse answers POST /v1/responses/{id}/cancel: a
// background response running on this frontend is killed and answered
// as it was stored, cancelled. One queued or in progress that does not
// run here (its frontend restarted, or it runs on another one) is marked
// cancelled in the store. A response that already ended is answered as
// it is.
func (s *Service) handleCancelResponse(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	rec := s.storedRecord(w, r)
	if rec == nil {
		return
	}
	var resp openai.Response
	if err := json.Unmarshal(rec.Response, &resp); err != nil {
		s.answerStored(w, r, fmt.Errorf("stored response %s: %w", id, err))
		return
	}
	if !resp.Background {
		s.answerStored(w, r, &storedError{status: http.StatusBadRequest, message: fmt.Sprintf("Response with id '%s' was not created with background=true: only background responses can be cancelled.", id)})
		return
	}
	switch {
	case s.background.cancel(id):
		if rec = s.storedRecord(w, r); rec == nil {
			return
		}
	case resp.Status == openai.ResponseQueued || resp.Status == openai.ResponseInProgress:
		resp.Status = openai.ResponseCancelled
		b, err := json.Marshal(&resp)
		if err == nil {
			rec.Response = b
			err = s.store.Put(r.Context(), rec)
		}
		if err != nil {
			s.answerStored(w, r, s.storeFailure(storeOpPut, id, "", err))
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(rec.Response, '\n'))
}
