package responsestore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// store is what both stores offer.
type store interface {
	Get(ctx context.Context, id string) (*Record, error)
	Put(ctx context.Context, rec *Record) error
	Delete(ctx context.Context, id string) error
}

func record(id, text string) *Record {
	return &Record{
		ID:       id,
		Response: json.RawMessage(`{"id":"` + id + `","object":"response","status":"completed"}`),
		Input:    []json.RawMessage{json.RawMessage(`{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"` + text + `"}]}`)},
		WorkerID: 42,
	}
}

// testStore checks what every store does: put, get, replace, delete, not
// found, an id that is not a plain key.
func testStore(t *testing.T, s store) {
	ctx := t.Context()
	if _, err := s.Get(ctx, "resp_missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing id: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "resp_missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of a missing id: %v, want ErrNotFound", err)
	}
	for _, id := range []string{"resp_0a6c2f9e-1d4b-4f1e-9d59-6e2d0c1b7a11", "resp odd/id.with*chars>"} {
		want := record(id, "hello")
		if err := s.Put(ctx, want); err != nil {
			t.Fatalf("Put %q: %v", id, err)
		}
		got, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get %q: %v", id, err)
		}
		if got.StoredAt.IsZero() {
			t.Errorf("Get %q: StoredAt not set", id)
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Record{}, "StoredAt")); diff != "" {
			t.Errorf("Get %q (-put +got):\n%s", id, diff)
		}
		// A second Put replaces the record (a background response moves
		// from queued to completed).
		if err := s.Put(ctx, record(id, "again")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, id); err != nil || !strings.Contains(string(got.Input[0]), "again") {
			t.Errorf("after a second Put: %v %v", got, err)
		}
		if err := s.Delete(ctx, id); err != nil {
			t.Fatalf("Delete %q: %v", id, err)
		}
		if _, err := s.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after Delete: %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("second Delete: %v, want ErrNotFound", err)
		}
	}
	if err := s.Put(ctx, &Record{}); err == nil {
		t.Error("Put of a record without an id succeeded")
	}
}
