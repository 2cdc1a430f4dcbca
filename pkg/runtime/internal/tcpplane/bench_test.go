package tcpplane

import (
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// BenchmarkSend measures one request and its ack over loopback with a
// 1 KiB payload and two headers, serially (one request in flight) and in
// parallel (GOMAXPROCS×8 senders pipelining over the pool).
//
//	go test -run=^$ -bench=Send -benchmem ./pkg/runtime/internal/tcpplane/
func BenchmarkSend(b *testing.B) {
	s := startServer(b, ServerConfig{}, map[string]plane.Handler{"1/generate": accept})
	headers := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-request-id": "r"}
	payload := make([]byte, 1024)

	b.Run("serial", func(b *testing.B) {
		c := newClient(b, ClientConfig{})
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Send(b.Context(), s.Addr(), "1/generate", headers, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		c := newClient(b, ClientConfig{})
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Send(b.Context(), s.Addr(), "1/generate", headers, payload); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
