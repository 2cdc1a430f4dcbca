package frontend

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Connections given back while the server is slow to take them wait for
// it: none is dropped, each keeps what its client already sent.
func TestGiveBackWaitsForTheServer(t *testing.T) {
	q := newConnQueueOf(nil, 1, time.Minute)
	defer q.Close()
	const n = 10
	clients := make([]net.Conn, n)
	var wg sync.WaitGroup
	for i := range n {
		server, client := net.Pipe()
		clients[i] = client
		wg.Go(func() { q.giveBack(server, []byte{byte('a' + i)}) })
	}
	got := map[byte]bool{}
	for range n {
		c, err := q.Accept()
		if err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatalf("a connection given back lost what its client sent: %v", err)
		}
		got[b[0]] = true
		_ = c.Close()
	}
	wg.Wait()
	if len(got) != n {
		t.Errorf("%d distinct connections came back of %d", len(got), n)
	}
	for _, c := range clients {
		_ = c.Close()
	}
}

// A connection given back with nothing sent yet reaches the server with
// its client's next request, however long the client waits within the
// idle timeout, and is closed once idle for longer; Close closes the
// idle ones.
func TestGiveBackKeepsAnIdleConnectionUntilItsNextRequest(t *testing.T) {
	q := newConnQueueOf(nil, 4, 300*time.Millisecond)
	server, client := net.Pipe()
	q.giveBack(server, nil)
	time.AfterFunc(50*time.Millisecond, func() { _, _ = client.Write([]byte("GET")) })
	c, err := q.Accept()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "GET" {
		t.Fatalf("the next request reads %q, %v", b, err)
	}

	idleServer, idleClient := net.Pipe()
	q.giveBack(idleServer, nil)
	if _, err := idleClient.Read(make([]byte, 1)); err == nil {
		t.Error("a connection idle past the timeout was not closed")
	}

	waitingServer, waitingClient := net.Pipe()
	q.giveBack(waitingServer, nil)
	go func() { _ = q.Close() }()
	if _, err := waitingClient.Read(make([]byte, 1)); err == nil {
		t.Error("Close left an idle connection open")
	}
	if _, err := q.Accept(); err == nil {
		t.Error("Accept after Close returned a connection")
	}
	_ = c.Close()
	_ = client.Close()
}
