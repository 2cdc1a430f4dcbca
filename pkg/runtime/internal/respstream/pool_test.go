package respstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// A caller that is behind (it has not read a stream's opening frame yet)
// but keeps sending frames is not taken for dead: the worker waits for the
// ack as long as it hears from the caller, and gives the connection up
// only after the ack timeout of silence.
func TestLateAckFromALiveCallerKeepsTheConnection(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	pool := NewPool(timeout, time.Minute, slog.New(slog.DiscardHandler))
	defer pool.Close()

	rc := newTestRequest(t)
	opened := make(chan error, 1)
	go func() {
		_, err := pool.open(rc, Target{Address: ln.Addr().String(), Subject: "s1", ServerID: "caller", StreamID: 7})
		opened <- err
	}()
	conn := <-accepted
	defer conn.Close()
	r := bufio.NewReader(conn)
	if _, err := codec.ReadMessage(r, 1<<20); err != nil { // the worker's hello
		t.Fatal(err)
	}
	accept, _ := json.Marshal(muxAccept{StreamType: streamTypeResponseMux, Version: MuxVersion, Window: 1 << 20})
	if err := codec.WriteMessage(conn, codec.Message{Header: accept}); err != nil {
		t.Fatal(err)
	}
	if id, m, err := codec.ReadStreamMessage(r, 1<<20); err != nil || id != 7 || !bytes.Contains(m.Header, []byte(`"s1"`)) {
		t.Fatalf("opening frame: id %d, %q, %v", id, m.Header, err)
	}

	// Behind: no ack for five times the timeout (the bound for a stream
	// left unacknowledged is six), but a keep-going frame on stream 0
	// every third of it.
	keepGoing := codec.AppendStreamMessage(nil, 0, codec.Message{Header: ctrlAck})
	for range 15 {
		if _, err := conn.Write(keepGoing); err != nil {
			t.Fatalf("the worker gave up a caller that kept sending: %v", err)
		}
		time.Sleep(timeout / 3)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("the worker dialled a new connection although the caller kept sending")
	default:
	}
	ack := codec.AppendStreamMessage(nil, 7, codec.Message{Header: ctrlAck})
	if _, err := conn.Write(ack); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("open: %v", err)
	}

	// Silent with a stream waiting for its ack: given up after the
	// timeout (the worker closes the connection).
	rc2 := newTestRequest(t)
	if _, err := pool.open(rc2, Target{Address: ln.Addr().String(), Subject: "s2", ServerID: "caller", StreamID: 8}); err != nil {
		t.Fatalf("open: %v", err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(20 * timeout))
	for {
		if _, _, err := codec.ReadStreamMessage(r, 1<<20); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the worker kept a silent connection with an unacknowledged stream")
			}
			break
		}
	}
	if d := time.Since(start); d < timeout/2 {
		t.Fatalf("the connection was given up %v after the stream opened; want about %v", d, timeout)
	}
	t.Logf("a silent caller's connection was given up %v after the stream opened", time.Since(start).Round(time.Millisecond))
}

// A worker gives up a shared connection whose caller leaves what it wrote
// unanswered for the silence bound (a stopped process, a host gone without
// a reset): the acknowledged streams on it end, so their requests stop.
func TestSilentCallerIsGivenUp(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pool := NewPool(timeout, time.Minute, slog.New(slog.DiscardHandler))
	defer pool.Close()
	rc := newTestRequest(t)
	opened := make(chan *muxOut, 1)
	go func() {
		o, err := pool.open(rc, Target{Address: ln.Addr().String(), Subject: "s1", ServerID: "caller", StreamID: 7})
		if err != nil {
			t.Errorf("open: %v", err)
		}
		opened <- o
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if _, err := codec.ReadMessage(r, 1<<20); err != nil {
		t.Fatal(err)
	}
	accept, _ := json.Marshal(muxAccept{StreamType: streamTypeResponseMux, Version: MuxVersion, Window: 1 << 20})
	if err := codec.WriteMessage(conn, codec.Message{Header: accept}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := codec.ReadStreamMessage(r, 1<<20); err != nil { // the opening frame
		t.Fatal(err)
	}
	if _, err := conn.Write(codec.AppendStreamMessage(nil, 7, codec.Message{Header: ctrlAck})); err != nil {
		t.Fatal(err)
	}
	o := <-opened
	if o == nil {
		t.FailNow()
	}
	// Idle and acknowledged: nothing is owed, the connection stays.
	time.Sleep(3 * timeout)
	if rc.IsKilled() {
		t.Fatal("an idle connection whose caller owes nothing was given up")
	}
	// A frame the caller never answers.
	start := time.Now()
	if _, err := o.Write(proOK); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rc.Killed():
		t.Logf("the stream's request was killed %v after the unanswered write (%v)", time.Since(start).Round(time.Millisecond), context.Cause(rc))
	case <-time.After(20 * timeout):
		t.Fatal("the worker kept a connection whose caller left a write unanswered")
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("given up %v after the write; want the silence bound %v", d, timeout)
	}
}
