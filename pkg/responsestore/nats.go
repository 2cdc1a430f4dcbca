package responsestore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBucket is the JetStream key-value bucket of NATS by default.
const DefaultBucket = "dynamo_responses"

// NATSConfig configures NewNATS.
type NATSConfig struct {
	// Bucket is the key-value bucket (default DefaultBucket). Every
	// frontend sharing conversations names the same one.
	Bucket string
	// TTL is the bucket's TTL (its stream's max age): how long a record
	// is kept after its last write. Required. A bucket that exists with
	// another TTL is updated to this one.
	TTL time.Duration
	// Replicas is the bucket's replica count (default 1; 3 on a
	// three-node JetStream cluster survives the loss of a node).
	Replicas int
	// OpTimeout bounds each operation, so that a server that does not
	// answer makes the request fail fast (default 2 s).
	OpTimeout time.Duration
}

// NATS is the shared store: a JetStream key-value bucket, one key per
// response. Its values are limited by the server's max_payload (1 MiB
// by default): a larger record is refused with ErrTooLarge.
type NATS struct {
	cfg NATSConfig
	nc  *nats.Conn
	js  jetstream.JetStream

	mu sync.Mutex
	kv jetstream.KeyValue // nil until the bucket was found or created
}

// NewNATS returns the store of the bucket cfg.Bucket on the server nc is
// connected to (or will connect to: nc may still be reconnecting).
// Nothing is sent yet. The caller keeps nc and closes it.
func NewNATS(nc *nats.Conn, cfg NATSConfig) (*NATS, error) {
	if nc == nil {
		return nil, errors.New("responsestore: NewNATS: nil connection")
	}
	if cfg.TTL <= 0 {
		return nil, errors.New("responsestore: NATSConfig.TTL must be positive")
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 2 * time.Second
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("responsestore: jetstream: %w", err)
	}
	return &NATS{cfg: cfg, nc: nc, js: js}, nil
}

// bucket returns the key-value bucket, creating it (or updating its TTL)
// on first use.
func (n *NATS) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kv != nil {
		return n.kv, nil
	}
	kv, err := n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      n.cfg.Bucket,
		Description: "Dynamo frontend: stored Responses API responses",
		TTL:         n.cfg.TTL,
		Replicas:    n.cfg.Replicas,
		History:     1,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: bucket %s: %w", ErrUnavailable, n.cfg.Bucket, err)
	}
	n.kv = kv
	return kv, nil
}

// Get returns the record of id; ErrNotFound when there is none or it
// expired.
func (n *NATS) Get(ctx context.Context, id string) (*Record, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.OpTimeout)
	defer cancel()
	kv, err := n.bucket(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, natsKey(id))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted), errors.Is(err, jetstream.ErrInvalidKey):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	case err != nil:
		return nil, fmt.Errorf("%w: reading %s: %w", ErrUnavailable, id, err)
	}
	return decode(id, e.Value())
}

// Put writes rec (replacing the record of its id), stamped with the
// current time; the bucket's TTL runs from this write.
func (n *NATS) Put(ctx context.Context, rec *Record) error {
	stamped := *rec
	stamped.StoredAt = time.Now()
	// The value travels as one message: leave room for its headers.
	b, err := encode(&stamped, int(n.nc.MaxPayload())-1024)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.OpTimeout)
	defer cancel()
	kv, err := n.bucket(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, natsKey(rec.ID), b); err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			return fmt.Errorf("%w: %s: %w", ErrTooLarge, rec.ID, err)
		}
		return fmt.Errorf("%w: writing %s: %w", ErrUnavailable, rec.ID, err)
	}
	return nil
}

// Delete removes the record of id (its key is purged, so that no
// history keeps it); ErrNotFound when there is none.
func (n *NATS) Delete(ctx context.Context, id string) error {
	if _, err := n.Get(ctx, id); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.OpTimeout)
	defer cancel()
	kv, err := n.bucket(ctx)
	if err != nil {
		return err
	}
	if err := kv.Purge(ctx, natsKey(id)); err != nil {
		return fmt.Errorf("%w: deleting %s: %w", ErrUnavailable, id, err)
	}
	return nil
}

// plainKey are the ids used as keys as they are; any other id (ids come
// from clients' URLs) is encoded.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// natsKey is id's key in the bucket: the id itself when it is made of
// letters, digits, '-' and '_' (as "resp_<uuid>" is), else "b64." and
// its unpadded URL-safe base64.
func natsKey(id string) string {
	if plainKey.MatchString(id) {
		return id
	}
	return "b64." + base64.RawURLEncoding.EncodeToString([]byte(id))
}
