package codec

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkWriteRead measures encoding one frame with WriteMessage and
// decoding it with ReadMessage through an in-memory buffer, for a typical
// request envelope (1 KiB header) and several body sizes.
//
//	go test -run=^$ -bench=WriteRead -benchmem ./pkg/runtime/internal/codec/
func BenchmarkWriteRead(b *testing.B) {
	header := bytes.Repeat([]byte("h"), 1024)
	for _, size := range []int{0, 1 << 10, 64 << 10, 1 << 20} {
		m := Message{Header: header, Data: bytes.Repeat([]byte("d"), size)}
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			var buf bytes.Buffer
			buf.Grow(m.Size())
			b.SetBytes(int64(m.Size()))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := WriteMessage(&buf, m); err != nil {
					b.Fatal(err)
				}
				if _, err := ReadMessage(&buf, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
