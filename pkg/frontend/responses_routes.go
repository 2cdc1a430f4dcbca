package frontend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/responsestore"
)

// Limits of GET /v1/responses/{id}/input_items, as OpenAI's.
const (
	inputItemsDefaultLimit = 20
	inputItemsMaxLimit     = 100
)

// storedRecord reads the record of the path's id, or answers the error
// (404 unknown or storage off, 503 store down) and returns nil.
func (s *Service) storedRecord(w http.ResponseWriter, r *http.Request) *responsestore.Record {
	id := chi.URLParam(r, "id")
	if s.store == nil {
		s.answerStored(w, r, &storedError{status: http.StatusNotFound,
			message: fmt.Sprintf("Response with id '%s' not found: this server does not store responses (--responses-store none).", id)})
		return nil
	}
	rec, err := s.store.Get(r.Context(), id)
	if err != nil {
		s.answerStored(w, r, s.storeFailure(storeOpGet, id, "", err))
		return nil
	}
	return rec
}

// answerStored answers a failed request of the stored-Responses routes.
func (s *Service) answerStored(w http.ResponseWriter, r *http.Request, err error) {
	e := s.classify(err)
	if e.status >= 500 {
		s.log.WarnContext(r.Context(), "frontend: response store request failed", "path", r.URL.Path, "status", e.status, "error", e.message)
	}
	writeError(w, openAIErrors, e)
}

// handleGetResponse answers GET /v1/responses/{id}: the stored response
// object, as it was answered (or, for a background response, as it
// stands).
func (s *Service) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	rec := s.storedRecord(w, r)
	if rec == nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(rec.Response, '\n'))
}

// handleDeleteResponse answers DELETE /v1/responses/{id}: the record is
// removed (a background response still running is cancelled first), and
// the id is unknown from then on.
func (s *Service) handleDeleteResponse(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if s.storedRecord(w, r) == nil {
		return
	}
	s.background.cancel(id)
	if err := s.store.Delete(r.Context(), id); err != nil {
		s.answerStored(w, r, s.storeFailure(storeOpDelete, id, "", err))
		return
	}
	writeJSON(w, http.StatusOK, openai.DeletedResponse{ID: id, Object: "response", Deleted: true})
}

// handleInputItems answers GET /v1/responses/{id}/input_items: a page of
// the items the model saw (the earlier turns' items included), newest
// first unless order=asc; after and before are item ids.
func (s *Service) handleInputItems(w http.ResponseWriter, r *http.Request) {
	page, err := readItemPage(r)
	if err != nil {
		s.answerStored(w, r, err)
		return
	}
	rec := s.storedRecord(w, r)
	if rec == nil {
		return
	}
	list, err := page.of(rec.Input)
	if err != nil {
		s.answerStored(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// itemPage is what a list request asks for.
type itemPage struct {
	limit         int
	asc           bool
	after, before string
}

func readItemPage(r *http.Request) (itemPage, error) {
	q := r.URL.Query()
	p := itemPage{limit: inputItemsDefaultLimit, after: q.Get("after"), before: q.Get("before")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > inputItemsMaxLimit {
			return p, &openai.ValidationError{Param: "limit", Message: fmt.Sprintf("Validation: limit %q: want an integer from 1 to %d", v, inputItemsMaxLimit)}
		}
		p.limit = n
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		p.asc = true
	default:
		return p, &openai.ValidationError{Param: "order", Message: fmt.Sprintf("Validation: order %q: want asc or desc", q.Get("order"))}
	}
	return p, nil
}

// of returns the page of items (stored oldest first).
func (p itemPage) of(items []json.RawMessage) (openai.ResponseItemList, error) {
	items = slices.Clone(items)
	if !p.asc {
		slices.Reverse(items)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		var v struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &v)
		ids[i] = v.ID
	}
	lo, hi := 0, len(items)
	for _, c := range []struct {
		param, id string
		set       func(i int)
	}{
		{"after", p.after, func(i int) { lo = i + 1 }},
		{"before", p.before, func(i int) { hi = i }},
	} {
		if c.id == "" {
			continue
		}
		i := slices.Index(ids, c.id)
		if i < 0 {
			return openai.ResponseItemList{}, &openai.ValidationError{Param: c.param, Message: fmt.Sprintf("Validation: %s: no input item with id '%s' in this response", c.param, c.id)}
		}
		c.set(i)
	}
	list := openai.ResponseItemList{Object: "list", Data: []json.RawMessage{}}
	if lo >= hi {
		return list, nil
	}
	// With only before, the page is the one that ends right before it.
	if p.before != "" && p.after == "" && hi-lo > p.limit {
		lo = hi - p.limit
		list.HasMore = true
	}
	end := min(hi, lo+p.limit)
	list.HasMore = list.HasMore || end < hi
	list.Data = items[lo:end]
	list.FirstID, list.LastID = &ids[lo], &ids[end-1]
	return list, nil
}
