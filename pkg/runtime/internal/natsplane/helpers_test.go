package natsplane

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// connect opens a connection that reconnects forever, as the package doc
// requires, and closes it when the test ends.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url,
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond),
		nats.ReconnectJitter(0, 0),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// setup starts NATS and returns a server and a client on separate
// connections, as a worker and a frontend would have.
func setup(t testing.TB) (*testenv.NATS, *Server, *Client) {
	t.Helper()
	n := testenv.StartNATS(t)
	s := NewServer(connect(t, n.URL), nil)
	t.Cleanup(func() { s.Close() })
	return n, s, NewClient(connect(t, n.URL), 2*time.Second)
}
