package runtime_test

import (
	"context"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// BenchmarkResponseMux compares, in one run, the response streams on a
// connection per stream (classic, Config.DisableResponseMux) with streams
// on a shared connection (the default): one call with a one-item answer
// (ns/op is the round trip), and the same from 8 goroutines per core
// (req/s). TCP request plane.
//
//	go test -run='^$' -bench=ResponseMux ./pkg/runtime/
func BenchmarkResponseMux(b *testing.B) {
	for _, mode := range []struct {
		name string
		off  bool
	}{{"classic", true}, {"shared", false}} {
		cfg := runtime.Config{Discovery: runtime.DiscoveryMem, RequestPlane: runtime.PlaneTCP, TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: -1, DisableResponseMux: mode.off}
		payload := []byte(`{"n":1}`)
		b.Run("roundtrip/"+mode.name, func(b *testing.B) {
			cl, id := benchPairConfig(b, cfg)
			for b.Loop() {
				if err := cl.Call(runtime.NewContext(context.Background(), ""), id, payload, func([]byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("concurrent/"+mode.name, func(b *testing.B) {
			cl, id := benchPairConfig(b, cfg)
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := cl.Call(runtime.NewContext(context.Background(), ""), id, payload, func([]byte) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
