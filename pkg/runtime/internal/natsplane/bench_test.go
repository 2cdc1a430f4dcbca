package natsplane

import (
	"testing"
)

// BenchmarkSend measures one request and its empty ack through an
// in-process NATS server over loopback, with a 1 KiB payload and two
// headers, serially and with parallel senders.
//
//	go test -run=^$ -bench=Send -benchmem ./pkg/runtime/internal/natsplane/
func BenchmarkSend(b *testing.B) {
	_, s, c := setup(b)
	if err := s.Register(subject, func(map[string]string, []byte) error { return nil }); err != nil {
		b.Fatal(err)
	}
	headers := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-request-id": "r"}
	payload := make([]byte, 1024)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Send(b.Context(), subject, headers, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Send(b.Context(), subject, headers, payload); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
