// Command hello is the runtime's hello world: one process serves a
// streaming endpoint, another discovers it and calls it.
//
//	hello serve [flags]        serve dyn://hello.greeter.greet
//	hello call [flags] NAME    call it and print the reply as it streams
//
// Both take the runtime's flags and environment (--discovery-backend,
// --request-plane, ETCD_ENDPOINTS, NATS_SERVER, DYN_FILE_KV, ...). On one
// machine without etcd: DYN_FILE_KV=/tmp/kv hello serve --discovery-backend file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dynamo-go/dynamo/internal/runtimeflags"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

var endpoint = runtime.EndpointID{Namespace: "hello", Component: "greeter", Name: "greet"}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 || (args[0] != "serve" && args[0] != "call") {
		fmt.Fprintln(os.Stderr, "usage: hello serve [flags] | hello call [flags] NAME")
		return 2
	}
	fs := flag.NewFlagSet("hello "+args[0], flag.ContinueOnError)
	rf := runtimeflags.Register(fs, os.Getenv)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hello %s [flags]\n", args[0])
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), runtimeflags.EnvHelp)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cfg, err := rf.Config()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rt, err := runtime.New(ctx, cfg, runtime.Deps{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		return 1
	}
	runDone := make(chan error, 1)
	runCtx, cancelRun := context.WithCancel(context.Background())
	go func() { runDone <- rt.Run(runCtx) }()
	defer func() { cancelRun(); <-runDone }()

	if args[0] == "serve" {
		return serve(ctx, rt)
	}
	return call(ctx, rt, strings.Join(fs.Args(), " "))
}

func serve(ctx context.Context, rt *runtime.DistributedRuntime) int {
	fmt.Fprintf(os.Stderr, "hello: serving %s as instance %x\n", endpoint, rt.InstanceID())
	err := rt.Endpoint(endpoint).Serve(ctx, runtime.HandlerFunc(greet))
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		return 1
	}
	return 0
}

// greet streams "Hello, NAME!" word by word, stopping early when asked.
func greet(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
	var name string
	if err := json.Unmarshal(payload, &name); err != nil || name == "" {
		return runtime.NewError(runtime.TypeInvalidArgument, "want a JSON string with a name")
	}
	for _, w := range strings.Fields("Hello, " + name + "! Greetings from a streaming endpoint.") {
		if rc.IsStopped() {
			return nil
		}
		b, _ := json.Marshal(w + " ")
		if err := emit(b); err != nil {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-rc.Done():
			return context.Cause(rc)
		}
	}
	return nil
}

func call(ctx context.Context, rt *runtime.DistributedRuntime, name string) int {
	if name == "" {
		name = "world"
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := rt.Endpoint(endpoint).Client(waitCtx)
	var ids []uint64
	if err == nil {
		ids, err = cl.WaitForInstances(waitCtx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello: no greeter found:", err)
		return 1
	}
	payload, _ := json.Marshal(name)
	rc := runtime.NewContext(ctx, "")
	defer rc.Release()
	// Any greeter will do: call one at random.
	err = cl.Call(rc, ids[rand.IntN(len(ids))], payload, func(item []byte) error {
		var word string
		if err := json.Unmarshal(item, &word); err != nil {
			return err
		}
		fmt.Print(word)
		return nil
	})
	fmt.Println()
	if err != nil && !errors.Is(err, runtime.ErrKilled) {
		fmt.Fprintln(os.Stderr, "hello:", err)
		return 1
	}
	return 0
}
