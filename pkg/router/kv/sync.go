package kv

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// eventIndex is what eventSync feeds: the router's indexer.
type eventIndex interface {
	Apply(ctx context.Context, ev kvblock.RouterEvent) error
	ClearWorker(w Worker)
	RemoveWorker(id uint64)
}

// Querier asks a worker's local index (kvblock.LocalIndex, served on
// worker_kv_indexer_query_dp{r}) for events or a dump.
type Querier interface {
	Query(ctx context.Context, w Worker, req kvblock.QueryRequest) (kvblock.QueryResponse, error)
}

// eventSync keeps an indexer in step with the workers' KV events (spec
// §1.4): it applies each event, notices gaps in a worker's event ids and
// fills them from the worker's local index, takes a full dump when it
// first hears of a worker, and drops a worker that left.
type eventSync struct {
	idx   eventIndex
	query Querier
	log   *slog.Logger

	mu    sync.Mutex
	last  map[Worker]uint64 // the newest event id applied per worker and rank
	known map[Worker]bool   // a dump was loaded (the next event's id starts the count)
}

// newEventSync returns a sync over idx that recovers through query.
func newEventSync(idx eventIndex, query Querier, log *slog.Logger) *eventSync {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &eventSync{idx: idx, query: query, log: log, last: map[Worker]uint64{}, known: map[Worker]bool{}}
}

// HandleMessage applies one event-plane payload (a RouterEvent, see
// kvblock.Marshal). Undecodable payloads are logged and skipped.
func (s *eventSync) HandleMessage(ctx context.Context, data []byte) {
	var ev kvblock.RouterEvent
	if err := kvblock.Unmarshal(data, &ev); err != nil {
		s.log.Warn("kv router: undecodable KV event skipped", "err", err)
		return
	}
	s.Handle(ctx, ev)
}

// Handle applies one event, first recovering what was missed before it.
func (s *eventSync) Handle(ctx context.Context, ev kvblock.RouterEvent) {
	w := Worker{ID: ev.WorkerID, DPRank: ev.Event.DPRank}
	id := ev.Event.EventID
	s.mu.Lock()
	last, counting := s.last[w]
	dumped := s.known[w]
	s.mu.Unlock()
	switch {
	case !counting && !dumped:
		// First word from this worker and rank: start from its whole state.
		s.Resync(ctx, w)
	case counting && id > last+1:
		start, end := last+1, id-1
		s.recover(ctx, w, &start, &end)
	}
	if err := s.idx.Apply(ctx, ev); err != nil {
		s.log.Debug("kv router: event not applied", "worker_id", fmt.Sprintf("%x", w.ID), "dp_rank", w.DPRank, "event_id", id, "err", err)
	}
	s.mu.Lock()
	if cur, ok := s.last[w]; !ok || id > cur {
		s.last[w] = id
	}
	s.mu.Unlock()
}

// Resync replaces what the indexer knows of a worker's rank with a dump of
// its local index (on discovery, or when its history is gone).
func (s *eventSync) Resync(ctx context.Context, w Worker) {
	s.recover(ctx, w, nil, nil)
}

// recover fetches [start, end] (nil start: a dump) and applies it.
func (s *eventSync) recover(ctx context.Context, w Worker, start, end *uint64) {
	resp, err := s.query.Query(ctx, w, kvblock.QueryRequest{WorkerID: w.ID, StartEventID: start, EndEventID: end})
	if err != nil {
		s.log.Warn("kv router: cannot recover missed KV events; the index may lag for this worker",
			"worker_id", fmt.Sprintf("%x", w.ID), "dp_rank", w.DPRank, "err", err)
		return
	}
	switch {
	case resp.Events != nil:
		for _, ev := range resp.Events {
			if err := s.idx.Apply(ctx, ev); err != nil {
				s.log.Debug("kv router: recovered event not applied", "worker_id", fmt.Sprintf("%x", w.ID), "err", err)
			}
		}
		if n := len(resp.Events); n > 0 {
			s.setLast(w, resp.Events[n-1].Event.EventID)
		}
		s.log.Info("kv router: filled a gap in KV events", "worker_id", fmt.Sprintf("%x", w.ID), "dp_rank", w.DPRank, "events", len(resp.Events))
	case resp.TooNew != nil || resp.InvalidRange != nil || resp.Error != "":
		s.log.Warn("kv router: worker could not answer a KV event query", "worker_id", fmt.Sprintf("%x", w.ID), "dp_rank", w.DPRank,
			"too_new", resp.TooNew != nil, "invalid_range", resp.InvalidRange != nil, "error", resp.Error)
	default:
		s.idx.ClearWorker(w)
		for _, ev := range resp.TreeDump {
			ev.WorkerID = w.ID // dumps carry the worker's id; trust the one asked
			if err := s.idx.Apply(ctx, ev); err != nil {
				s.log.Debug("kv router: dump event not applied", "worker_id", fmt.Sprintf("%x", w.ID), "err", err)
			}
		}
		s.log.Info("kv router: loaded a worker's KV index", "worker_id", fmt.Sprintf("%x", w.ID), "dp_rank", w.DPRank, "blocks", len(resp.TreeDump))
		// A dump has no event ids: count again from the next event.
		s.mu.Lock()
		delete(s.last, w)
		s.known[w] = true
		s.mu.Unlock()
	}
}

func (s *eventSync) setLast(w Worker, id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.last[w]; !ok || id > cur {
		s.last[w] = id
	}
}

// RemoveWorker drops a worker that left discovery, all its ranks.
func (s *eventSync) RemoveWorker(id uint64) {
	s.mu.Lock()
	for w := range s.last {
		if w.ID == id {
			delete(s.last, w)
		}
	}
	for w := range s.known {
		if w.ID == id {
			delete(s.known, w)
		}
	}
	s.mu.Unlock()
	s.idx.RemoveWorker(id)
}
