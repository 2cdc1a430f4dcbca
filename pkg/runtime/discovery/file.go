package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"
)

// FileConfig configures a File store.
type FileConfig struct {
	// Dir is the directory shared by the processes of one machine. It is
	// created if missing. Required.
	Dir string
	// TTL is how long a key outlives its last touch. Zero means DefaultTTL.
	// Readers judge expiry by their own TTL, so every process sharing Dir
	// must use the same one.
	TTL time.Duration
	// PollInterval is how often a Watch re-reads Dir. Zero means 100 ms.
	PollInterval time.Duration
	// Logger receives warnings about failed touches and sweeps. Nil
	// discards them.
	Logger *slog.Logger
}

// File is a Store kept in a directory shared by the processes of one machine
// (the "file" discovery back-end).
//
// The format is our own, not the Rust runtime's directory tree: the
// directory is flat and each key is one file, named by the key
// percent-encoded (every byte that is not an ASCII letter or digit becomes
// %XX) and holding the value. Writers write a temporary file (".tmp_...",
// which readers ignore) and rename it into place; Create hard-links it, so
// that exactly one of several racing processes wins.
//
// Liveness is the file's mtime: Run touches the files this store owns every
// TTL/3, and
// any store's Run deletes files older than the TTL. Readers ignore such
// files before they are deleted. Watches poll the directory.
type File struct {
	dir  string
	ttl  time.Duration
	poll time.Duration
	log  *slog.Logger
	id   uint64
	*life

	mu    sync.Mutex           // serializes writes with Run's touches and Close
	owned map[string]ownedFile // keys this store wrote and keeps alive
}

// ownedFile is a key a File store keeps alive.
type ownedFile struct {
	value   []byte
	touched time.Time // last write or touch
}

var _ Store = (*File)(nil)

// NewFile returns a File store over cfg.Dir, creating the directory if
// needed. It starts nothing; call Run to keep its keys alive.
func NewFile(cfg FileConfig) (*File, error) {
	if cfg.Dir == "" {
		return nil, errors.New("discovery: file store: Dir is required")
	}
	if cfg.TTL < 0 || cfg.PollInterval < 0 {
		return nil, errors.New("discovery: file store: negative TTL or PollInterval")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("discovery: file store: %w", err)
	}
	return &File{
		dir:   cfg.Dir,
		ttl:   cfg.TTL,
		poll:  cfg.PollInterval,
		log:   orDiscard(cfg.Logger),
		id:    randomID(),
		life:  newLife(),
		owned: make(map[string]ownedFile),
	}, nil
}

// Done is closed when the store is closed (or orphaned), or a touch came too late.
func (f *File) Done() <-chan struct{} { return f.life.Done() }

// Err returns ErrLeaseLost or ErrClosed once Done is closed, nil before.
func (f *File) Err() error { return f.life.Err() }

// ID returns the store's random non-zero instance id.
func (f *File) ID() uint64 { return f.id }

// Create writes key=value if key is absent (or expired); see Store. It is
// atomic across processes.
func (f *File) Create(ctx context.Context, key string, value []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ready(ctx, "create"); err != nil {
		return err
	}
	if err := checkValue(key, value); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	tmp, err := f.writeTemp(value)
	if err != nil {
		return fmt.Errorf("discovery: create %q: %w", key, err)
	}
	defer os.Remove(tmp)
	path := f.path(key)
	for range 3 {
		err := os.Link(tmp, path)
		if err == nil {
			f.owned[key] = ownedFile{value: bytes.Clone(value), touched: time.Now()}
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("discovery: create %q: %w", key, err)
		}
		cur, ok, err := f.read(path, time.Now())
		switch {
		case err != nil:
			return fmt.Errorf("discovery: create %q: %w", key, err)
		case !ok:
			f.removeExpired(path) // expired or just deleted: try again
		case bytes.Equal(cur, value):
			return nil
		default:
			return fmt.Errorf("%w: %q", ErrExists, key)
		}
	}
	return fmt.Errorf("discovery: create %q: key keeps changing", key)
}

// Put writes key=value; see Store.
func (f *File) Put(ctx context.Context, key string, value []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ready(ctx, "put"); err != nil {
		return err
	}
	if err := checkValue(key, value); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	tmp, err := f.writeTemp(value)
	if err != nil {
		return fmt.Errorf("discovery: put %q: %w", key, err)
	}
	if err := os.Rename(tmp, f.path(key)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("discovery: put %q: %w", key, err)
	}
	f.owned[key] = ownedFile{value: bytes.Clone(value), touched: time.Now()}
	return nil
}

// Delete removes key, whoever wrote it; see Store.
func (f *File) Delete(ctx context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ready(ctx, "delete"); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	delete(f.owned, key)
	if err := os.Remove(f.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("discovery: delete %q: %w", key, err)
	}
	return nil
}

// List returns the live entries under prefix, sorted by key.
func (f *File) List(ctx context.Context, prefix string) ([]KeyValue, error) {
	if err := f.ready(ctx, "list"); err != nil {
		return nil, err
	}
	s, err := f.scan(prefix)
	if err != nil {
		return nil, err
	}
	return s.sorted(), nil
}

// Watch reports changes under prefix by reading the directory every
// PollInterval and diffing; see Store.
func (f *File) Watch(ctx context.Context, prefix string) (<-chan Event, error) {
	if err := f.ready(ctx, "watch"); err != nil {
		return nil, err
	}
	prev, err := f.scan(prefix)
	if err != nil {
		return nil, err
	}
	out := make(chan Event)
	err = f.goWatch(ctx, func(ctx context.Context) {
		defer close(out)
		if !send(ctx, out, resync(prev.sorted())) {
			return
		}
		t := time.NewTicker(f.poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			next, err := f.scan(prefix)
			if err != nil {
				f.log.Warn("discovery: file watch", "dir", f.dir, "err", err)
				continue
			}
			for _, ev := range prev.diff(next) {
				if !send(ctx, out, ev) {
					return
				}
			}
			prev = next
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: watch", err)
	}
	return out, nil
}

// Close deletes the files this store owns (unless another process has
// overwritten them since) and ends its watches. It is idempotent.
func (f *File) Close() error {
	if !f.stop() {
		return nil
	}
	f.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for key, o := range f.owned {
		path := f.path(key)
		cur, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(cur, o.value) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	clear(f.owned)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("discovery: close: %w", err)
	}
	return nil
}

// Orphan stops keeping this store's keys alive without deleting them, as if
// the process had died: they expire after the TTL. Done is closed with
// ErrClosed, watches end and Run returns nil. Close is then a no-op.
func (f *File) Orphan() {
	if !f.stop() {
		return
	}
	f.wait()
	f.mu.Lock() // wait for a touch in progress
	clear(f.owned)
	f.mu.Unlock()
}

// ready returns why an operation cannot start: ctx ended or the store is
// stopped or lost.
func (f *File) ready(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("discovery: %s: %w", op, err)
	}
	return f.check(op)
}
