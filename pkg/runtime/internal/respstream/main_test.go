package respstream

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	errKilled     = errors.New("killed")
	errCallerGone = errors.New("caller gone")
)

// proOK is a successful prologue.
var proOK = codec.Message{Header: []byte(`{"error":null}`)}

// testRequest is a Request whose kill cancels its context with the cause.
type testRequest struct {
	context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	killed  chan struct{}
	dead    bool
	stopped bool
}

func newTestRequest(t *testing.T) *testRequest {
	ctx, cancel := context.WithCancelCause(t.Context())
	r := &testRequest{Context: ctx, cancel: cancel, killed: make(chan struct{})}
	t.Cleanup(func() { cancel(nil) })
	return r
}

func (r *testRequest) Killed() <-chan struct{} { return r.killed }

func (r *testRequest) IsKilled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dead
}

func (r *testRequest) Stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

func (r *testRequest) Kill()       { r.kill(errKilled) }
func (r *testRequest) CallerGone() { r.kill(errCallerGone) }

func (r *testRequest) kill(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return
	}
	r.dead = true
	close(r.killed)
	r.cancel(cause)
}
