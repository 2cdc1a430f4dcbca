package deploytest

import (
	"flag"
	"fmt"
	"io"

	natsserver "github.com/nats-io/nats-server/v2/server"
	etcdflags "go.etcd.io/etcd/pkg/v3/flags"
	"go.etcd.io/etcd/server/v3/embed"
)

// ParseEtcdArgs parses an etcd command line (without the program name)
// with etcd's own flags: embed.Config's, and the one etcd's main adds
// (--initial-cluster-state). It returns the configuration and the flag
// set, for the URL flags, which embed reads from the set.
func ParseEtcdArgs(args []string) (*embed.Config, *flag.FlagSet, error) {
	cfg := embed.NewConfig()
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.AddFlags(fs)
	fs.Var(etcdflags.NewSelectiveStringValue("new", "existing"), "initial-cluster-state", "")
	if err := fs.Parse(args); err != nil {
		return nil, nil, fmt.Errorf("etcd %q: %w", args, err)
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("etcd %q: stray arguments %q", args, fs.Args())
	}
	return cfg, fs, nil
}

// ParseNATSArgs parses a nats-server command line (without the program
// name) with NATS's own option parser.
func ParseNATSArgs(args []string) (*natsserver.Options, error) {
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nop := func() {}
	opts, err := natsserver.ConfigureOptions(fs, args, nop, nop, nop)
	if err != nil {
		return nil, fmt.Errorf("nats-server %q: %w", args, err)
	}
	return opts, nil
}
