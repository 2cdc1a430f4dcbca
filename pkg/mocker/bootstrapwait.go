package mocker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// ErrBootstrap is wrapped by the error of a decode request whose bootstrap
// handoff failed: the prefill engine's bootstrap server could not be
// reached, closed the connection without an ACK (the prefill failed), or
// did not answer within 30 s. It is not a transport error: the decode
// worker is fine, so the request is not migrated to another one.
var ErrBootstrap = errors.New("mocker: bootstrap handoff failed")

// errWaitStopped ends a bootstrap wait whose request was stopped.
var errWaitStopped = errors.New("mocker: stopped while waiting for the prefill")

// waitForPrefill connects to the prefill engine named by info, sends the
// room id and waits for the ACK, each step within timeout. A killed
// request returns its context's cause, a stopped one errWaitStopped, an
// engine shut down backend.ErrEngineShutdown; anything else wraps
// ErrBootstrap.
func waitForPrefill(ctx context.Context, info *backend.BootstrapInfo, timeout time.Duration, shutdown <-chan struct{}) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-backend.Stopped(ctx):
			cancel(errWaitStopped)
		case <-shutdown:
			cancel(backend.ErrEngineShutdown)
		case <-wctx.Done():
		}
	}()
	addr := net.JoinHostPort(info.Host, strconv.Itoa(info.Port))
	fail := func(what string, err error) error {
		if killed(ctx) { // a kill also stops: the kill wins
			<-ctx.Done() // the kill ends the context right after it stops it
			return context.Cause(ctx)
		}
		if wctx.Err() != nil {
			return fmt.Errorf("mocker: %w", context.Cause(wctx))
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("%w: room %d at %s: %s: no answer within %s", ErrBootstrap, info.Room, addr, what, timeout)
		}
		return fmt.Errorf("%w: room %d at %s: %s: %w", ErrBootstrap, info.Room, addr, what, err)
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(wctx, "tcp", addr)
	if err != nil {
		return fail("connect", err)
	}
	defer c.Close()
	stop := context.AfterFunc(wctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(timeout))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], info.Room)
	if _, err := c.Write(b[:]); err != nil {
		return fail("send the room id", err)
	}
	if _, err := io.ReadFull(c, b[:1]); err != nil {
		if errors.Is(err, io.EOF) && wctx.Err() == nil {
			return fmt.Errorf("%w: room %d at %s: closed without an ACK (the prefill failed, or did not end within %s)", ErrBootstrap, info.Room, addr, timeout)
		}
		return fail("wait for the ACK", err)
	}
	if b[0] != bootstrapACK {
		return fmt.Errorf("%w: room %d at %s: got %#x, want the ACK %#x", ErrBootstrap, info.Room, addr, b[0], bootstrapACK)
	}
	return nil
}

// killed reports whether ctx's request was killed. A kill stops the
// request before it ends its context, so a wait woken by the stop asks
// the request's state (which the kill sets with the stop) rather than
// ctx.Err(), which may not be set yet.
func killed(ctx context.Context) bool {
	if rc, ok := runtime.FromContext(ctx); ok {
		return rc.IsKilled()
	}
	return ctx.Err() != nil
}
