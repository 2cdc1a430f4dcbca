package responsestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors of every store, matched with errors.Is.
var (
	// ErrNotFound: no record has the id, or it expired or was deleted.
	ErrNotFound = errors.New("responsestore: response not found")
	// ErrUnavailable: the store cannot be reached or written now (the
	// file cannot be opened or is locked, the disk is full, the NATS
	// server does not answer); a later call may succeed.
	ErrUnavailable = errors.New("responsestore: store unavailable")
	// ErrTooLarge: the record is larger than the store takes in one
	// value (NATS: the server's max_payload).
	ErrTooLarge = errors.New("responsestore: record too large")
)

// Record is one stored response: the response object as the API returns
// it, and the input items the model saw for it (the earlier turns of its
// conversation, then the request's own input), each with its id.
type Record struct {
	// ID is the response's id ("resp_...").
	ID string `json:"id"`
	// Response is the response object (JSON) as GET /v1/responses/{id}
	// returns it.
	Response json.RawMessage `json:"response"`
	// Input are the input items (JSON objects with an "id"), oldest
	// first: what GET /v1/responses/{id}/input_items lists, and, with
	// the response's output items, what a request continuing from this
	// response prepends to its own input.
	Input []json.RawMessage `json:"input"`
	// WorkerID is the worker instance that served the response (0: not
	// known, or not served yet), for conversations that prefer to stay
	// on the worker that holds their KV cache.
	WorkerID uint64 `json:"worker_id,omitempty"`
	// StoredAt is when the record was last written; the retention TTL
	// runs from it.
	StoredAt time.Time `json:"stored_at"`
}

// encode returns rec as a stored value, or ErrTooLarge when it exceeds
// limit bytes (0: no limit).
func encode(rec *Record, limit int) ([]byte, error) {
	if rec.ID == "" {
		return nil, errors.New("responsestore: a record needs an id")
	}
	// Without HTML escaping: the stored JSON is what was put.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return nil, fmt.Errorf("responsestore: encoding %s: %w", rec.ID, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if limit > 0 && len(b) > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, the store takes at most %d", ErrTooLarge, rec.ID, len(b), limit)
	}
	return b, nil
}

// decode reads a stored value.
func decode(id string, b []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("responsestore: decoding %s: %w", id, err)
	}
	return &rec, nil
}
