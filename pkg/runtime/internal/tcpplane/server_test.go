package tcpplane

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// rawFrame encodes a request frame with a literal headers section.
func rawFrame(path, headers string, payload []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(path)))
	b = append(b, path...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(headers)))
	b = append(b, headers...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

func readAck(t *testing.T, r io.Reader) string {
	t.Helper()
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		t.Fatalf("read ack: %v", err)
	}
	text := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, text); err != nil {
		t.Fatalf("read ack text: %v", err)
	}
	return string(text)
}

func dialRaw(t *testing.T, s *Server) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

// TestServerPipelinedFIFO writes many frames in one write before reading
// any ack, and checks that the handler saw them in order and that the acks
// come back in the same order.
func TestServerPipelinedFIFO(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	s := startServer(t, ServerConfig{}, map[string]plane.Handler{
		"ep": func(_ map[string]string, p []byte) error {
			mu.Lock()
			seen = append(seen, string(p))
			mu.Unlock()
			if len(p)%2 == 1 { // odd-length payloads are rejected with their text
				return errors.New(string(p))
			}
			return nil
		},
	})
	nc := dialRaw(t, s)
	const n = 500
	var burst []byte
	var want []string
	for i := range n {
		p := strings.Repeat("x", i%7) + fmt.Sprint(i)
		want = append(want, p)
		burst = append(burst, rawFrame("ep", "", []byte(p))...)
	}
	go nc.Write(burst)
	br := bufio.NewReader(nc)
	for i, p := range want {
		got := readAck(t, br)
		wantAck := ""
		if len(p)%2 == 1 {
			wantAck = p
		}
		if got != wantAck {
			t.Fatalf("ack %d = %q, want %q", i, got, wantAck)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("handler call %d saw %q, want %q", i, seen[i], want[i])
		}
	}
}

func TestServerAcks(t *testing.T) {
	got := make(chan map[string]string, 4)
	s := startServer(t, ServerConfig{MaxMessageSize: 100}, map[string]plane.Handler{
		"ep": func(h map[string]string, _ []byte) error { got <- h; return nil },
	})
	nc := dialRaw(t, s)
	br := bufio.NewReader(nc)
	tests := []struct {
		name  string
		frame []byte
		ack   string
	}{
		{"unknown path", rawFrame("nope", "", nil), "Unknown endpoint: nope"},
		{"too large", rawFrame("ep", "", make([]byte, 200)), "message too large"},
		{"bad headers", rawFrame("ep", "[1]", nil), "invalid headers: "},
		{"empty object", rawFrame("ep", "{}", nil), ""},
		{"headers", rawFrame("ep", `{"a":"b"}`, []byte("p")), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := nc.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			if ack := readAck(t, br); !strings.HasPrefix(ack, tc.ack) || (tc.ack == "") != (ack == "") {
				t.Fatalf("ack = %q, want prefix %q", ack, tc.ack)
			}
		})
	}
	<-got
	if h := <-got; h["a"] != "b" {
		t.Fatalf("headers = %v", h)
	}
}

// TestServerTruncatedFrame checks that a connection cut mid-frame is
// dropped without disturbing the server.
func TestServerTruncatedFrame(t *testing.T) {
	s := startServer(t, ServerConfig{}, map[string]plane.Handler{"ep": accept})
	nc := dialRaw(t, s)
	frame := rawFrame("ep", "", []byte("payload"))
	nc.Write(frame[:len(frame)-3])
	nc.Close()

	nc = dialRaw(t, s)
	nc.Write(frame)
	if ack := readAck(t, nc); ack != "" {
		t.Fatalf("ack = %q", ack)
	}
}

func TestServerCloseIdempotent(t *testing.T) {
	s, err := Listen(ServerConfig{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}
