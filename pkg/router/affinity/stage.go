package affinity

import (
	"context"
	"slices"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/router"
)

// Workers is what the stage asks of the routing below it: the workers a
// request can go to, and whether one refuses requests as full
// (*router.PushRouter implements it).
type Workers interface {
	Available() []uint64
	Loads(ids []uint64) ([]router.Load, int)
}

// Gate narrows the candidates to the workers admission does not count as
// full (*admission.Stage's Unsaturated).
type Gate func(candidates []uint64) []uint64

// Stage routes the turns of a session to the worker bound to it.
type Stage struct {
	next    backend.Generator
	table   *Table
	workers Workers
	gate    Gate // nil: no admission
}

var _ backend.Generator = (*Stage)(nil)

// NewStage returns the stage in front of next, which routes among
// workers; gate (optional) says which workers admission finds full.
func NewStage(next backend.Generator, table *Table, workers Workers, gate Gate) *Stage {
	return &Stage{next: next, table: table, workers: workers, gate: gate}
}

// Generate sends a request of a bound session to the session's worker
// while that worker is usable, and binds the session to the worker that
// serves it. Requests without a session, and requests that name their
// worker, pass through.
func (s *Stage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	rt := req.Routing
	if rt == nil || rt.Session == nil || rt.BackendInstanceID != nil {
		return s.next.Generate(ctx, req, emit)
	}
	sess := *rt.Session
	result := ResultNew
	bound, ok := s.table.Lookup(sess.ID)
	if ok {
		result = ResultRebound
		if s.usable(bound) {
			result = ResultBound
			// A copy: the stages above (migration) keep the request as
			// the client sent it, and re-issue it unpinned.
			pinned := *req
			prt := *rt
			prt.BackendInstanceID = &bound
			pinned.Routing = &prt
			req = &pinned
		}
	}
	s.table.cfg.Metrics.request(s.table.cfg.Model, result)
	placed := false
	err := s.next.Generate(ctx, req, func(out *backend.Output) error {
		if !placed && out.Placement != nil {
			placed = true
			if !sess.Close {
				s.table.Bind(sess.ID, out.Placement.WorkerID, sess.TTL)
			}
		}
		return emit(out)
	})
	if sess.Close {
		s.table.Unbind(sess.ID)
	}
	return err
}

// usable reports whether worker id can take the session's next turn: it
// is available, has not refused a request as full lately, and admission
// does not count it as full.
func (s *Stage) usable(id uint64) bool {
	avail := s.workers.Available()
	if _, found := slices.BinarySearch(avail, id); !found {
		return false
	}
	if loads, _ := s.workers.Loads([]uint64{id}); len(loads) == 1 && loads[0].Refusing {
		return false
	}
	if s.gate != nil && len(avail) > 1 {
		return slices.Contains(s.gate(avail), id)
	}
	return true
}
