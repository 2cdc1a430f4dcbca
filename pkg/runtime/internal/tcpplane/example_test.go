package tcpplane_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/tcpplane"
)

func Example() {
	// Worker: one listener for every endpoint of the process.
	srv, err := tcpplane.Listen(tcpplane.ServerConfig{Addr: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	queue := make(chan []byte, 16)
	srv.Register("7b/generate", func(headers map[string]string, payload []byte) error {
		select {
		case queue <- payload: // only queue; the work happens elsewhere
			return nil
		default:
			return errors.New("queue full")
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Run(ctx) }()

	// Caller: a pool of pipelined connections per worker address.
	c := tcpplane.NewClient(tcpplane.ClientConfig{})
	err = c.Send(ctx, srv.Addr(), "7b/generate", map[string]string{"x-request-id": "r1"}, []byte("envelope"))
	fmt.Println(err, string(<-queue))

	err = c.Send(ctx, srv.Addr(), "7b/embed", nil, nil)
	var ack *plane.AckError
	fmt.Println(errors.As(err, &ack), ack.Text)

	c.Close()
	cancel()
	fmt.Println(<-done)
	// Output:
	// <nil> envelope
	// true Unknown endpoint: 7b/embed
	// <nil>
}
