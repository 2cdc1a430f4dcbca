// Command bench is a load generator for OpenAI-compatible streaming
// endpoints, plus the bare baseline server its numbers are compared with.
//
//	bench run --url http://localhost:8000 --model NAME --rate 500 --requests 5000 --json stack.json
//	bench run --url http://localhost:8000 --model NAME --workload multi-turn --turns 30 --history-len 60000 --concurrency 8 --requests 3000 --watch-pid PID
//	bench baseline --addr 127.0.0.1:8100
//	bench compare baseline.json stack.json
//	bench otlp-sink --addr 127.0.0.1:4317
//
// Flags: bench --help, or bench COMMAND --help; bench --version prints the
// version and commit.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dynamo-go/dynamo/cmd/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: its flags and its body.
type command struct {
	name, args, summary string
	// flags returns the command's flag set, for the usage text.
	flags func(stderr io.Writer) *flag.FlagSet
	// main runs the command and returns the exit code.
	main func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{"run", "[flags]", "drive an endpoint with load and report TTFT, ITL, TPOT, latency and throughput",
		func(w io.Writer) *flag.FlagSet { return newRunFlags(w).fs }, runMain},
	{"baseline", "[flags]", "serve the same token streams from a bare net/http server until SIGINT/SIGTERM",
		func(w io.Writer) *flag.FlagSet { return newBaselineFlags(w).fs }, baselineMain},
	{"compare", "a.json b.json", "print two JSON reports side by side with b − a and b / a", nil, compareMain},
	{"otlp-sink", "[flags]", "receive OTLP/gRPC trace exports and drop them, counting spans, until SIGINT/SIGTERM",
		func(w io.Writer) *flag.FlagSet { return newOTLPSinkFlags(w).fs }, otlpSinkMain},
}

// run returns the exit code: 0 on success, 1 when the work failed, 2 for
// bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "version", "-version", "--version":
		version.Print(stdout, "bench")
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.main(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "bench: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// usage lists every command with all its flags and defaults.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bench COMMAND [flags]")
	fmt.Fprintln(w, "       bench --version")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	for _, c := range commands {
		fmt.Fprintf(w, "\nbench %s %s\n", c.name, c.args)
		if c.flags != nil {
			c.flags(w).PrintDefaults()
		}
	}
}
