package respstream

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// gatedConn is a net.Conn whose first Write waits for a release and that
// records every Write.
type gatedConn struct {
	net.Conn
	release chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	writes  [][]byte
}

func (c *gatedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	first := len(c.writes) == 0
	c.writes = append(c.writes, bytes.Clone(b))
	c.mu.Unlock()
	if first {
		close(c.entered)
		<-c.release
	}
	return len(b), nil
}

// The worker's writer writes a lone frame at once, from the caller of
// send, and writes whatever is queued during a write in one go after it.
func TestLinkWriterCoalesces(t *testing.T) {
	conn := &gatedConn{release: make(chan struct{}), entered: make(chan struct{})}
	w := &linkWriter{conn: conn, onErr: func(error) {}}
	w.flushed.L = &w.mu
	frame := func(id uint64) codec.Message {
		return codec.Message{Data: fmt.Appendf(nil, "%d", id)}
	}
	first := make(chan int64, 1)
	go func() {
		end, _ := w.send(1, frame(1))
		first <- end
	}()
	<-conn.entered // the lone frame is being written: no waiting for company
	var ends []int64
	for id := uint64(2); id <= 10; id++ {
		end, err := w.send(id, frame(id)) // queued: returns at once
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	close(conn.release)
	<-first
	if err := w.wait(ends[len(ends)-1]); err != nil {
		t.Fatal(err)
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if len(conn.writes) != 2 {
		t.Fatalf("%d writes, want 2: the lone frame, then the nine queued meanwhile", len(conn.writes))
	}
	r := bytes.NewReader(conn.writes[1])
	for want := uint64(2); want <= 10; want++ {
		id, m, err := codec.ReadStreamMessage(r, 0)
		if err != nil || id != want || string(m.Data) != string(frame(want).Data) {
			t.Fatalf("second write, frame of stream %d: got stream %d %q, %v", want, id, m.Data, err)
		}
	}
	if _, _, err := codec.ReadStreamMessage(r, 0); err != io.EOF {
		t.Fatalf("second write holds more than the nine frames: %v", err)
	}
}
