package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
)

// The caller's reading of a response stream: the runtime's frames (the
// prologue, the data items, complete_final) on the transport's stream
// (respstream.Stream).

// readStream consumes an established response stream. Once the caller
// stops or kills rc, a goroutine owned by this call forwards that to the
// worker; a stream that is never stopped costs no goroutine.
func readStream(rc *Context, st respstream.Stream, emit func([]byte) error) error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	unwatch := context.AfterFunc(rc.stopCtx, func() {
		defer wg.Done()
		forward(rc, st, done)
	})
	ended := false // the worker ended the stream
	idle := streamIdle(rc)
	defer func() {
		close(done)
		if unwatch() {
			wg.Done() // forward never started
		}
		st.Close(ended)
		wg.Wait()
		idle()
	}()

	first, err := st.Next(rc)
	if err != nil {
		ended = errors.Is(err, respstream.ErrReset)
		return endedEarly(rc, err)
	}
	var pro prologue
	if !bytes.Equal(first.Header, prologueOK) { // the usual one, as the runtime writes it
		if err := json.Unmarshal(first.Header, &pro); err != nil {
			return NewError(TypeUnknown, "runtime: bad response prologue: %v", err)
		}
	}
	if pro.Error != nil {
		ended = true
		if pro.ErrorDetail != nil {
			return pro.ErrorDetail
		}
		return &Error{Type: TypeUnknown, Message: *pro.Error}
	}

	var firstErr error
	for {
		if !st.Ready() {
			idle() // everything received so far is delivered
		}
		msg, err := st.Next(rc)
		if err != nil {
			ended = errors.Is(err, respstream.ErrReset)
			if rc.IsStopped() && !rc.IsKilled() {
				return firstErr
			}
			return endedEarly(rc, err)
		}
		if len(msg.Data) == 0 {
			continue // a control frame ("sentinel") before complete_final: ignore
		}
		if item, ok := plainItem(msg.Data); ok {
			if err := emit(item); err != nil {
				st.Kill()
				return err
			}
			continue
		}
		if bytes.Equal(msg.Data, completeFinalFrame) { // as the runtime writes it
			ended = true
			return firstErr
		}
		var w streamWrapper
		if err := json.Unmarshal(msg.Data, &w); err != nil {
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "runtime: undecodable response item: %v", err))
			continue
		}
		switch {
		case w.CompleteFinal:
			ended = true
			return firstErr
		case w.Data == nil:
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "runtime: response item with neither data nor complete_final"))
		case w.Data.Error != nil:
			firstErr = cmpErr(firstErr, w.Data.Error)
		case w.Data.Event == "error":
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "%s", strings.Join(w.Data.Comment, "; ")))
		case len(w.Data.Data) > 0:
			if err := emit(w.Data.Data); err != nil {
				st.Kill()
				return err
			}
		}
	}
}

// forward runs once rc is stopped or killed: it sends "stop" (unless rc
// is killed already), then "kill" when rc is killed, and aborts the
// stream, which ends the reader.
func forward(rc *Context, st respstream.Stream, done <-chan struct{}) {
	if !rc.IsKilled() {
		st.Stop()
	}
	select {
	case <-rc.Killed():
		st.Kill()
		st.Abort()
	case <-done:
	}
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// endedEarly maps a read failure before complete_final: the caller's own
// kill, a silent orphan, or a worker that went away.
func endedEarly(rc *Context, err error) error {
	if rc.IsKilled() {
		return context.Cause(rc)
	}
	var orphan respstream.OrphanedError
	if errors.As(err, &orphan) {
		return NewError(TypeDisconnected, "%s: the worker left discovery and its stream was silent for %s", MsgStreamEnded, orphan.Timeout)
	}
	e := NewError(TypeDisconnected, MsgStreamEnded)
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, respstream.ErrReset) && err.Error() != "EOF" {
		e.Cause = &Error{Type: TypeUnknown, Message: err.Error()}
	}
	return e
}
