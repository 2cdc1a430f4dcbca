package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/responsestore"
)

// ResponseStore keeps the stored responses of the Responses API:
// responsestore.File or responsestore.NATS. Its errors wrap
// responsestore.ErrNotFound, ErrUnavailable or ErrTooLarge.
type ResponseStore interface {
	Get(ctx context.Context, id string) (*responsestore.Record, error)
	Put(ctx context.Context, rec *responsestore.Record) error
	Delete(ctx context.Context, id string) error
}

// storeWriteTimeout bounds the write of a response that was answered:
// the answer's end waits for it (so that the client's next turn finds
// it), never longer.
const storeWriteTimeout = 5 * time.Second

// Operations of the store, the op label of responses_store_errors_total.
const (
	storeOpGet    = "get"
	storeOpPut    = "put"
	storeOpDelete = "delete"
)

// storedError is a stored-Responses failure as the client sees it: its
// status, message and param (classify reads it).
type storedError struct {
	status  int
	message string
	param   string
	err     error // the store's error, if any
}

func (e *storedError) Error() string { return e.message }
func (e *storedError) Unwrap() error { return e.err }

// kind is the error_type label of e.
func (e *storedError) kind() string {
	switch e.status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	case http.StatusInternalServerError:
		return ErrInternal
	}
	return ErrValidation
}

// errStorageOff refuses what needs a store on a frontend without one.
func errStorageOff(what, param string) error {
	return &storedError{status: http.StatusBadRequest, param: param,
		message: what + " needs stored responses, and this server does not store them (--responses-store none); send the whole conversation in `input`"}
}

// storeFailure turns an error of the store's op on id into what the
// client sees, counting the failures that are the store's (not a
// missing id). param names the request field that gave id, if any.
func (s *Service) storeFailure(op, id, param string, err error) error {
	if errors.Is(err, responsestore.ErrNotFound) {
		what := "Response"
		if param == "previous_response_id" {
			what = "Previous response"
		}
		return &storedError{status: http.StatusNotFound, param: param, err: err, message: fmt.Sprintf("%s with id '%s' not found.", what, id)}
	}
	s.metrics.StoreError(op)
	if errors.Is(err, responsestore.ErrUnavailable) {
		return &storedError{status: http.StatusServiceUnavailable, err: err, message: "The response store is unavailable; retry later: " + err.Error()}
	}
	return &storedError{status: http.StatusInternalServerError, err: err, message: "The response store failed: " + err.Error()}
}

// storedTurn is what a stored request keeps besides its response: the
// conversation it continues and its own input items.
type storedTurn struct {
	history []json.RawMessage // the previous responses' input and output items
	own     []json.RawMessage // the request's input items, with ids
}

// input is the input items of the turn's record: the conversation, then
// the request's own.
func (t *storedTurn) input() []json.RawMessage {
	return append(append(make([]json.RawMessage, 0, len(t.history)+len(t.own)), t.history...), t.own...)
}

// prepareStored reads store, previous_response_id and background: it
// refuses what this server cannot serve, prepends the conversation of
// previous_response_id to the request's input, and returns the turn to
// store (nil: the request is not stored) and the conversation the
// request belongs to: the id of its first input item, which every later
// turn's record keeps first ("": none, a request not stored that
// continues nothing).
func (s *Service) prepareStored(ctx context.Context, req *openai.ResponsesRequest) (*storedTurn, string, error) {
	if s.store == nil {
		switch {
		case req.PreviousResponseID != nil:
			return nil, "", errStorageOff("previous_response_id", "previous_response_id")
		case req.InBackground():
			return nil, "", errStorageOff("background", "background")
		}
		off := false
		req.Store = &off // the response says it is not stored
		return nil, "", nil
	}
	if !req.StoreWanted() && req.PreviousResponseID == nil {
		return nil, "", nil
	}
	own, err := req.InputItems("msg_" + strings.ReplaceAll(uuid.NewString(), "-", "") + "_")
	if err != nil {
		return nil, "", err
	}
	t := &storedTurn{own: own}
	if req.PreviousResponseID != nil {
		prev := *req.PreviousResponseID
		rec, err := s.store.Get(ctx, prev)
		if err != nil {
			return nil, "", s.storeFailure(storeOpGet, prev, "previous_response_id", err)
		}
		var r struct {
			Status string            `json:"status"`
			Output []json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(rec.Response, &r); err != nil {
			return nil, "", s.storeFailure(storeOpGet, prev, "previous_response_id", err)
		}
		if r.Status == openai.ResponseQueued || r.Status == openai.ResponseInProgress {
			return nil, "", &storedError{status: http.StatusBadRequest, param: "previous_response_id",
				message: fmt.Sprintf("Previous response with id '%s' is still %s; wait until it ends.", prev, r.Status)}
		}
		t.history = append(rec.Input, r.Output...)
		if err := req.SetInput(t.input()); err != nil {
			return nil, "", err
		}
	}
	conversation := firstItemID(t.input())
	if !req.StoreWanted() {
		return nil, conversation, nil // a continuation that is not itself kept
	}
	return t, conversation, nil
}

// firstItemID returns the id of the first of items ("" if it has none).
func firstItemID(items []json.RawMessage) string {
	if len(items) == 0 {
		return ""
	}
	var it struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(items[0], &it)
	return it.ID
}

// putResponse stores resp with the input items of its turn, within
// storeWriteTimeout even when ctx was killed.
func (s *Service) putResponse(ctx context.Context, resp *openai.Response, turn *storedTurn, workerID uint64) error {
	var buf bytes.Buffer
	if err := openai.Encode(&buf, resp); err != nil {
		return err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWriteTimeout)
	defer cancel()
	return s.store.Put(ctx, &responsestore.Record{ID: resp.ID, Response: b, Input: turn.input(), WorkerID: workerID})
}
