package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// A worker serves a streaming endpoint; a caller in the same process finds
// it through discovery and calls it. In a deployment the two are separate
// processes and discovery is etcd.
func Example() {
	mem := discovery.NewMemSpace()
	cfg := runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", GracePeriod: -1}
	newRuntime := func() (*runtime.DistributedRuntime, func()) {
		rt, err := runtime.New(context.Background(), cfg, runtime.Deps{MemSpace: mem})
		if err != nil {
			panic(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = rt.Run(ctx) }()
		return rt, func() { cancel(); <-done }
	}
	worker, stopWorker := newRuntime()
	defer stopWorker()
	caller, stopCaller := newRuntime()
	defer stopCaller()

	ep := runtime.EndpointID{Namespace: "demo", Component: "greeter", Name: "greet"}
	serveCtx, stopServing := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = worker.Endpoint(ep).Serve(serveCtx, runtime.HandlerFunc(
			func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
				for _, w := range []string{`"Hello"`, `", "`, string(payload)} {
					if err := emit([]byte(w)); err != nil {
						return err
					}
				}
				return nil
			}))
	}()
	defer func() { stopServing(); <-served }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := caller.Endpoint(ep).Client(ctx)
	if err != nil {
		panic(err)
	}
	ids, err := client.WaitForInstances(ctx)
	if err != nil {
		panic(err)
	}
	var reply strings.Builder
	err = client.Call(runtime.NewContext(ctx, ""), ids[0], []byte(`"world"`), func(item []byte) error {
		reply.WriteString(strings.Trim(string(item), `"`))
		return nil
	})
	fmt.Println(reply.String(), err)
	// Output: Hello, world <nil>
}
