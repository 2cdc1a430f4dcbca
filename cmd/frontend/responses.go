package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/pkg/frontend"
	"github.com/dynamo-go/dynamo/pkg/responsestore"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Values of --responses-store.
const (
	responsesStoreFile = "file"
	responsesStoreNATS = "nats"
	responsesStoreNone = "none"
)

// defaultResponsesTTL is how long a stored response is kept: OpenAI
// keeps them 30 days, and clients written for it expect a conversation
// to continue that long.
const defaultResponsesTTL = "720h"

// responsesSettings are the response store's settings.
type responsesSettings struct {
	kind     string // file, nats, none
	dir      string // file: the data directory
	ttl      time.Duration
	bucket   string // nats: the key-value bucket
	replicas int    // nats: the bucket's replicas
}

// responsesConfig reads the --responses-* flags.
func (f *flags) responsesConfig(env func(string) string) (responsesSettings, error) {
	var errs []error
	c := responsesSettings{kind: *f.responsesStore, dir: *f.responsesDir, bucket: *f.responsesBucket, replicas: *f.responsesReplicas}
	switch c.kind {
	case responsesStoreFile, responsesStoreNATS, responsesStoreNone:
	default:
		errs = append(errs, fmt.Errorf("--responses-store %q: want file, nats or none", c.kind))
	}
	ttl, err := parseRetention(*f.responsesTTL)
	if err != nil {
		errs = append(errs, fmt.Errorf("--responses-ttl %q: %w", *f.responsesTTL, err))
	}
	c.ttl = ttl
	if c.dir == "" {
		c.dir = defaultResponsesDir(env)
	}
	if c.replicas < 1 || c.replicas > 5 {
		errs = append(errs, fmt.Errorf("--responses-nats-replicas %d: want 1 to 5", c.replicas))
	}
	return c, errors.Join(errs...)
}

// parseRetention reads a duration as Go writes one ("720h", "90m") or a
// number of days ("30d").
func parseRetention(v string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(strings.TrimSpace(v), "d"); ok {
		var n float64
		n, err = strconv.ParseFloat(days, 64)
		d = time.Duration(n * float64(24*time.Hour))
	} else {
		d, err = time.ParseDuration(v)
	}
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration such as 30d, 720h or 90m")
	}
	return d, nil
}

// defaultResponsesDir is the data directory of the file store by default:
// $XDG_STATE_HOME/dynamo/responses, else ~/.local/state/dynamo/responses
// (the XDG base directory for data that should persist across restarts
// but is not worth backing up), else one under the temporary directory.
func defaultResponsesDir(env func(string) string) string {
	if d := env("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "dynamo", "responses")
	}
	if home := env("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "dynamo", "responses")
	}
	return filepath.Join(os.TempDir(), "dynamo-responses")
}

// responseStore is the store the settings name, the owner that runs it
// (nil if none) and what closes it; nil store for none. Nothing is
// opened or dialed that could fail for want of the store: a frontend
// starts while its store is down and answers 503 where it is needed.
func responseStore(c responsesSettings, rcfg runtime.Config, log *slog.Logger) (frontend.ResponseStore, func(context.Context) error, func(), error) {
	switch c.kind {
	case responsesStoreFile:
		f, err := responsestore.NewFile(responsestore.FileConfig{Dir: c.dir, TTL: c.ttl})
		if err != nil {
			return nil, nil, nil, err
		}
		log.Info("frontend: stored responses in a file", "path", f.Path(), "ttl", c.ttl)
		run := func(ctx context.Context) error {
			// The first sweep opens the file: say at once if it cannot be.
			if _, err := f.Sweep(); err != nil {
				log.Warn("frontend: the response store is unavailable; stored Responses requests get 503 until it can be opened",
					"path", f.Path(), "err", err, "advice", "one frontend per --responses-data-dir; several frontends share --responses-store nats")
			}
			return f.Run(ctx)
		}
		return f, run, func() { _ = f.Close() }, nil
	case responsesStoreNATS:
		opts, err := runtime.NATSSecurityOptions(rcfg)
		if err != nil {
			return nil, nil, nil, err
		}
		opts = append(opts, nats.Name("dynamo-frontend-responses"), nats.RetryOnFailedConnect(true),
			nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
		nc, err := nats.Connect(rcfg.NATSServer, opts...)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("response store: nats: %w", err)
		}
		s, err := responsestore.NewNATS(nc, responsestore.NATSConfig{Bucket: c.bucket, TTL: c.ttl, Replicas: c.replicas})
		if err != nil {
			nc.Close()
			return nil, nil, nil, err
		}
		log.Info("frontend: stored responses in a NATS key-value bucket", "bucket", c.bucket, "ttl", c.ttl, "replicas", c.replicas)
		return s, nil, nc.Close, nil
	}
	log.Info("frontend: responses are not stored (--responses-store none)")
	return nil, nil, func() {}, nil
}
