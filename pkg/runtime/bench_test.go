package runtime_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// benchPair starts a worker and a caller in this process (mem discovery;
// real TCP or NATS request plane; real TCP response streams) and returns
// the caller's client and the worker's instance id.
func benchPair(b *testing.B, plane string) (*runtime.Client, uint64) {
	b.Helper()
	return benchPairConfig(b, runtime.Config{Discovery: runtime.DiscoveryMem, RequestPlane: plane, TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: -1})
}

func benchPairConfig(b *testing.B, cfg runtime.Config) (*runtime.Client, uint64) {
	b.Helper()
	plane := cfg.RequestPlane
	if plane == runtime.PlaneNATS {
		cfg.NATSServer = testenv.StartNATS(b).URL
	}
	mem := discovery.NewMemSpace()
	start := func() *runtime.DistributedRuntime {
		rt, err := runtime.New(context.Background(), cfg, runtime.Deps{MemSpace: mem})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = rt.Run(ctx) }()
		b.Cleanup(func() { cancel(); <-done })
		return rt
	}
	worker, caller := start(), start()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = worker.Endpoint(testEndpoint).Serve(ctx, newCounter()) }()
	b.Cleanup(func() { cancel(); <-served })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	cl, err := caller.Endpoint(testEndpoint).Client(wctx)
	if err == nil {
		_, err = cl.WaitForInstances(wctx)
	}
	if err != nil {
		b.Fatal(err)
	}
	return cl, worker.InstanceID()
}

// BenchmarkRoundTrip measures one request with a one-item response:
// request envelope over the request plane, ack, call-home, prologue, one
// data frame, complete_final. ns/op is the round-trip latency.
//
//	go test -run='^$' -bench=RoundTrip ./pkg/runtime/
func BenchmarkRoundTrip(b *testing.B) {
	for _, plane := range []string{runtime.PlaneTCP, runtime.PlaneNATS} {
		b.Run(plane, func(b *testing.B) {
			cl, id := benchPair(b, plane)
			payload := []byte(`{"n":1}`)
			for b.Loop() {
				if err := cl.Call(runtime.NewContext(context.Background(), ""), id, payload, func([]byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStream measures streamed items per second on one response
// stream of 10,000 small items (a JSON integer each, like a token id).
//
//	go test -run='^$' -bench=Stream ./pkg/runtime/
func BenchmarkStream(b *testing.B) {
	const items = 10000
	for _, plane := range []string{runtime.PlaneTCP, runtime.PlaneNATS} {
		b.Run(plane, func(b *testing.B) {
			cl, id := benchPair(b, plane)
			payload := []byte(`{"n":` + strconv.Itoa(items) + `}`)
			for b.Loop() {
				n := 0
				if err := cl.Call(runtime.NewContext(context.Background(), ""), id, payload, func([]byte) error { n++; return nil }); err != nil || n != items {
					b.Fatalf("got %d items, %v", n, err)
				}
			}
			b.ReportMetric(float64(items*b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkConcurrentRoundTrip is BenchmarkRoundTrip from many goroutines:
// requests/s through one caller and one worker.
func BenchmarkConcurrentRoundTrip(b *testing.B) {
	for _, plane := range []string{runtime.PlaneTCP, runtime.PlaneNATS} {
		b.Run(plane, func(b *testing.B) {
			cl, id := benchPair(b, plane)
			payload := []byte(`{"n":1}`)
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

// BenchmarkConcurrentStream is the load of a serving stack: many calls in
// flight at once (8 goroutines per core), each streaming 100 small items
// (like a short answer's tokens). It reports requests/s and items/s
// through one caller and one worker.
//
//	go test -run='^$' -bench=ConcurrentStream ./pkg/runtime/
func BenchmarkConcurrentStream(b *testing.B) {
	const items = 100
	for _, plane := range []string{runtime.PlaneTCP, runtime.PlaneNATS} {
		b.Run(plane, func(b *testing.B) {
			cl, id := benchPair(b, plane)
			payload := []byte(`{"n":` + strconv.Itoa(items) + `}`)
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := 0
					if err := cl.Call(runtime.NewContext(context.Background(), ""), id, payload, func([]byte) error { n++; return nil }); err != nil || n != items {
						b.Fatalf("got %d items, %v", n, err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			b.ReportMetric(float64(items*b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkBaseline is the floor the numbers above are read against,
// measured in the same run: a one-byte ping-pong on an open loopback TCP
// connection, a NATS request-reply, and a fresh loopback TCP connection
// (dial + accept + one byte each way), which every call pays for its
// call-home.
func BenchmarkBaseline(b *testing.B) {
	b.Run("tcp-pingpong", func(b *testing.B) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.Copy(c, c)
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		buf := []byte{1}
		for b.Loop() {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tcp-dial", func(b *testing.B) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c); c.Close() }()
			}
		}()
		buf := []byte{1}
		for b.Loop() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			_, _ = c.Write(buf)
			_, _ = io.ReadFull(c, buf)
			c.Close()
		}
	})
	b.Run("nats-request", func(b *testing.B) {
		srv := testenv.StartNATS(b)
		nc, err := nats.Connect(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		sub, _ := nc.Subscribe("echo", func(m *nats.Msg) { _ = m.Respond(nil) })
		defer sub.Unsubscribe()
		for b.Loop() {
			if _, err := nc.Request("echo", []byte("x"), 5*time.Second); err != nil {
				b.Fatal(fmt.Errorf("nats request: %w", err))
			}
		}
	})
}
