package runtime

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
)

// fakeStream is a response stream that yields frames, then fails with
// err; it records what the caller's side did to it.
type fakeStream struct {
	frames []codec.Message
	err    error

	mu     sync.Mutex
	stops  int
	kills  int
	closed bool
	ended  bool
}

func (s *fakeStream) Next(respstream.Call) (codec.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.frames) == 0 {
		return codec.Message{}, s.err
	}
	m := s.frames[0]
	s.frames = s.frames[1:]
	return m, nil
}

func (s *fakeStream) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames) > 0
}

func (s *fakeStream) Stop() {
	s.mu.Lock()
	s.stops++
	s.mu.Unlock()
}

func (s *fakeStream) Kill() {
	s.mu.Lock()
	s.kills++
	s.mu.Unlock()
}

func (s *fakeStream) Abort() {}

func (s *fakeStream) Close(ended bool) {
	s.mu.Lock()
	s.closed, s.ended = true, ended
	s.mu.Unlock()
}

// The ways a response stream ends, as a call reports them: the
// transport's ends (respstream) mapped to the runtime's errors.
func TestReadStreamEnds(t *testing.T) {
	proOK := codec.Message{Header: prologueOK}
	item := func(v string) codec.Message { return codec.Message{Data: appendDataFrame(nil, []byte(v))} }
	final := codec.Message{Data: completeFinalFrame}
	disconnected := func(wantCause bool) func(t *testing.T, err error) {
		return func(t *testing.T, err error) {
			var e *Error
			if !errors.As(err, &e) || e.Type != TypeDisconnected || e.Message != MsgStreamEnded || (e.Cause != nil) != wantCause {
				t.Fatalf("call = %#v, want Disconnected %q (cause: %v)", err, MsgStreamEnded, wantCause)
			}
		}
	}
	clean := func(t *testing.T, err error) {
		if err != nil {
			t.Fatalf("call = %v, want a clean end", err)
		}
	}
	tests := []struct {
		name      string
		stopAtOne bool
		frames    []codec.Message
		err       error
		wantItems string
		check     func(t *testing.T, err error)
		wantEnded bool // the worker ended the stream: no kill on close
	}{
		{"complete", false, []codec.Message{proOK, item("1"), final, {Header: ctrlSentinel}}, io.EOF, "1", clean, true},
		{"error prologue", false, []codec.Message{{Header: []byte(`{"error":"Backend.EngineShutdown: gone","error_detail":{"error_type":"Backend.EngineShutdown","message":"gone"}}`)}}, io.EOF, "", func(t *testing.T, err error) {
			if !errors.Is(err, ErrEngineShutdown) {
				t.Fatalf("call = %v, want EngineShutdown", err)
			}
		}, true},
		{"reset is a classic connection's end", false, []codec.Message{proOK, item("1"), item("2")}, respstream.ErrReset, "1,2", disconnected(false), true},
		{"reset after the caller's stop is a clean end", true, []codec.Message{proOK, item("1")}, respstream.ErrReset, "1", clean, true},
		{"connection ends after frames: they come first", false, []codec.Message{proOK, item("1"), item("2")}, io.EOF, "1,2", disconnected(false), false},
		{"a failed connection is the cause", false, []codec.Message{proOK}, errors.New("codec: checksum mismatch"), "", disconnected(true), false},
		{"bad prologue", false, []codec.Message{{Header: []byte(`nope`)}}, io.EOF, "", func(t *testing.T, err error) {
			if !errors.Is(err, ErrUnknown) {
				t.Fatalf("call = %v, want Unknown", err)
			}
		}, false},
		{"silent orphan", false, []codec.Message{proOK}, respstream.OrphanedError{Timeout: 3 * time.Second}, "", func(t *testing.T, err error) {
			if !errors.Is(err, ErrDisconnected) || !strings.Contains(err.Error(), "silent for 3s") {
				t.Fatalf("call = %v, want Disconnected: silent for 3s", err)
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := NewContext(t.Context(), "")
			defer rc.Release()
			st := &fakeStream{frames: tc.frames, err: tc.err}
			var items []string
			err := readStream(rc, st, func(b []byte) error {
				items = append(items, string(b))
				if tc.stopAtOne && string(b) == "1" {
					rc.Stop()
				}
				return nil
			})
			tc.check(t, err)
			if got := strings.Join(items, ","); got != tc.wantItems {
				t.Fatalf("items %q, want %q", got, tc.wantItems)
			}
			if !st.closed || st.ended != tc.wantEnded {
				t.Fatalf("stream closed %v ended %v, want closed, ended %v", st.closed, st.ended, tc.wantEnded)
			}
			if want := map[bool]int{true: 1}[tc.stopAtOne]; st.stops != want || st.kills != 0 {
				t.Fatalf("stops %d kills %d, want %d and 0", st.stops, st.kills, want)
			}
		})
	}
}

// An emit that fails kills the worker's stream.
func TestReadStreamEmitErrorKills(t *testing.T) {
	rc := NewContext(t.Context(), "")
	defer rc.Release()
	st := &fakeStream{frames: []codec.Message{{Header: prologueOK}, {Data: appendDataFrame(nil, []byte("1"))}}, err: io.EOF}
	boom := errors.New("boom")
	if err := readStream(rc, st, func([]byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("call = %v, want the emit's error", err)
	}
	if st.kills != 1 || st.ended {
		t.Fatalf("kills %d, ended %v; want one kill, not ended", st.kills, st.ended)
	}
}
