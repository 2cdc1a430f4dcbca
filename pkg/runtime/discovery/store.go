package discovery

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultTTL is the liveness TTL of a process's keys: the etcd lease TTL, and
// the mtime TTL of the file store.
const DefaultTTL = 10 * time.Second

// MaxValueSize is the largest value a store accepts (1 MiB): below etcd's
// default request limit of 1.5 MiB, so that a stock etcd takes every write
// and its WAL entries stay small enough for it to restart. Larger data
// (model files) travels out of band. Writes above it fail with
// ErrValueTooLarge.
const MaxValueSize = 1 << 20

// Errors returned by stores.
var (
	// ErrExists: Create found the key already present with another value.
	ErrExists = errors.New("discovery: key already exists")
	// ErrLeaseLost: the store's liveness lease is gone; its keys were (or
	// will be) removed and the process must stop serving.
	ErrLeaseLost = errors.New("discovery: lease lost")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("discovery: store closed")
	// ErrValueTooLarge: a value exceeds MaxValueSize.
	ErrValueTooLarge = errors.New("discovery: value too large")
)

// KeyValue is one entry of a store.
type KeyValue struct {
	Key   string
	Value []byte
}

// EventType says what a watch Event carries.
type EventType uint8

// Watch event types.
const (
	// EventResync carries the full current set of keys under the watched
	// prefix, in Snapshot. It is always the first event of a watch, and it
	// is sent again whenever the store had to re-list (for example after
	// reconnecting to etcd), so a consumer that replaces its view on every
	// Resync never misses a change.
	EventResync EventType = iota
	// EventPut: Key was created or updated to Value.
	EventPut
	// EventDelete: Key was removed (deleted, expired, or its owner closed).
	EventDelete
)

// Event is one change seen by a watch.
type Event struct {
	Type     EventType
	Key      string
	Value    []byte
	Snapshot []KeyValue
}

// Store is a discovery back-end: a key-value store in which every key this
// process writes is bound to the process's liveness. If the process dies,
// its keys vanish after the TTL; if it closes cleanly, they vanish at once.
//
// Implementations: etcd (one lease per process), file (one directory shared
// by processes on one machine, liveness by mtime) and mem (one process).
// All methods are safe for concurrent use.
type Store interface {
	// ID is this process's instance id: the etcd lease id, or a random
	// non-zero id for the file and mem stores.
	ID() uint64
	// Create writes key=value bound to this process's liveness if the key
	// is absent. It succeeds without change if the key already holds the
	// same value, and fails with ErrExists if it holds another.
	Create(ctx context.Context, key string, value []byte) error
	// Put writes key=value bound to this process's liveness, replacing any
	// previous value.
	Put(ctx context.Context, key string, value []byte) error
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the live entries whose key starts with prefix, sorted by
	// key.
	List(ctx context.Context, prefix string) ([]KeyValue, error)
	// Watch reports changes under prefix. The first event is EventResync;
	// then EventPut / EventDelete in order. The channel is closed when ctx
	// ends or the store is closed. A slow consumer delays the producer; no
	// event is dropped.
	Watch(ctx context.Context, prefix string) (<-chan Event, error)
	// Run keeps this process's liveness alive (lease keep-alive, mtime
	// touch, expiry sweep) until ctx ends, the store is closed (both return
	// nil) or the liveness is lost (returns ErrLeaseLost). Keys written
	// before Run starts are kept alive too.
	Run(ctx context.Context) error
	// Done is closed when the liveness is lost or the store is closed.
	Done() <-chan struct{}
	// Err returns ErrLeaseLost or ErrClosed after Done is closed, nil before.
	Err() error
	// Connectivity reports whether the store reaches the service behind
	// it (etcd) now, and since when.
	Connectivity() Connectivity
	// Close removes this process's keys at once (etcd: revokes the lease)
	// and releases resources. It is idempotent.
	Close() error
}

// checkValue refuses values larger than MaxValueSize.
func checkValue(key string, value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: %q is %d bytes, the limit is %d", ErrValueTooLarge, key, len(value), MaxValueSize)
	}
	return nil
}
