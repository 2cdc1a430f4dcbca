package responsestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileName is the name of File's database in its data directory.
const FileName = "responses.db"

// bucketRecords holds the records by id; bucketExpiry holds
// "<expiry, 8 bytes big-endian unix nanos><id>" keys, so that the sweep
// walks the expired ones in order and stops at the first live one.
var (
	bucketRecords = []byte("responses")
	bucketExpiry  = []byte("expiry")
)

// FileConfig configures NewFile.
type FileConfig struct {
	// Dir is the data directory; the database is Dir/responses.db.
	// Created (0700) on first use. Required.
	Dir string
	// TTL is how long a record is kept after its last write. Required.
	TTL time.Duration
	// SweepEvery is how often Run deletes expired records (default: a
	// tenth of the TTL, between 1 minute and 1 hour).
	SweepEvery time.Duration
	// MaxValueBytes is the largest record in bytes (default 16 MiB).
	MaxValueBytes int
	// Clock is the time; nil is time.Now.
	Clock func() time.Time
}

// File is the embedded store: a bbolt database in one file. One process
// at a time opens it (bbolt locks the file): a second frontend on the
// same directory finds the store unavailable.
type File struct {
	cfg FileConfig

	mu sync.Mutex
	db *bolt.DB // nil until the first operation that could open it
}

// NewFile returns the store of cfg.Dir; nothing is opened yet.
func NewFile(cfg FileConfig) (*File, error) {
	if cfg.Dir == "" {
		return nil, errors.New("responsestore: FileConfig.Dir is required")
	}
	if cfg.TTL <= 0 {
		return nil, errors.New("responsestore: FileConfig.TTL must be positive")
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = min(max(cfg.TTL/10, time.Minute), time.Hour)
	}
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = 16 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &File{cfg: cfg}, nil
}

// Path is the database file's path.
func (f *File) Path() string { return filepath.Join(f.cfg.Dir, FileName) }

// open returns the database, opening it if needed.
func (f *File) open() (*bolt.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db != nil {
		return f.db, nil
	}
	if err := os.MkdirAll(f.cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	db, err := bolt.Open(f.Path(), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %w", ErrUnavailable, f.Path(), err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketRecords, bucketExpiry} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, f.Path(), err)
	}
	f.db = db
	return db, nil
}

// Get returns the record of id; ErrNotFound when there is none or it
// expired.
func (f *File) Get(_ context.Context, id string) (*Record, error) {
	db, err := f.open()
	if err != nil {
		return nil, err
	}
	var val []byte
	err = db.View(func(tx *bolt.Tx) error {
		val = append([]byte(nil), tx.Bucket(bucketRecords).Get([]byte(id))...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if len(val) < 8 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if expires := time.Unix(0, int64(binary.BigEndian.Uint64(val))); !f.cfg.Clock().Before(expires) {
		return nil, fmt.Errorf("%w: %s (expired)", ErrNotFound, id)
	}
	return decode(id, val[8:])
}

// Put writes rec (replacing the record of its id), stamped with the
// current time, to be kept for the TTL.
func (f *File) Put(_ context.Context, rec *Record) error {
	now := f.cfg.Clock()
	stamped := *rec
	stamped.StoredAt = now
	b, err := encode(&stamped, f.cfg.MaxValueBytes)
	if err != nil {
		return err
	}
	db, err := f.open()
	if err != nil {
		return err
	}
	expires := uint64(now.Add(f.cfg.TTL).UnixNano())
	val := append(binary.BigEndian.AppendUint64(nil, expires), b...)
	err = db.Update(func(tx *bolt.Tx) error {
		recs, exp := tx.Bucket(bucketRecords), tx.Bucket(bucketExpiry)
		if old := recs.Get([]byte(rec.ID)); len(old) >= 8 {
			if err := exp.Delete(expiryKey(binary.BigEndian.Uint64(old), rec.ID)); err != nil {
				return err
			}
		}
		if err := exp.Put(expiryKey(expires, rec.ID), nil); err != nil {
			return err
		}
		return recs.Put([]byte(rec.ID), val)
	})
	if err != nil {
		return fmt.Errorf("%w: writing %s: %w", ErrUnavailable, rec.ID, err)
	}
	return nil
}

// Delete removes the record of id; ErrNotFound when there is none (or
// it had expired).
func (f *File) Delete(ctx context.Context, id string) error {
	if _, err := f.Get(ctx, id); err != nil {
		return err
	}
	db, err := f.open()
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucketRecords)
		old := recs.Get([]byte(id))
		if len(old) < 8 {
			return nil
		}
		if err := tx.Bucket(bucketExpiry).Delete(expiryKey(binary.BigEndian.Uint64(old), id)); err != nil {
			return err
		}
		return recs.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("%w: deleting %s: %w", ErrUnavailable, id, err)
	}
	return nil
}

// Run sweeps the expired records every SweepEvery until ctx ends, then
// closes the database. A sweep that fails (the file cannot be opened)
// is tried again at the next tick.
func (f *File) Run(ctx context.Context) error {
	t := time.NewTicker(f.cfg.SweepEvery)
	defer t.Stop()
	for {
		_, _ = f.Sweep()
		select {
		case <-ctx.Done():
			return f.Close()
		case <-t.C:
		}
	}
}

// Sweep deletes the records that expired and returns how many.
func (f *File) Sweep() (int, error) {
	db, err := f.open()
	if err != nil {
		return 0, err
	}
	now := uint64(f.cfg.Clock().UnixNano())
	n := 0
	err = db.Update(func(tx *bolt.Tx) error {
		recs, exp := tx.Bucket(bucketRecords), tx.Bucket(bucketExpiry)
		c := exp.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= now; k, _ = c.First() {
			if err := recs.Delete(k[8:]); err != nil {
				return err
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("%w: sweeping: %w", ErrUnavailable, err)
	}
	return n, nil
}

// Close closes the database, if it was opened. The store opens it again
// on its next use.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil {
		return nil
	}
	err := f.db.Close()
	f.db = nil
	return err
}

func expiryKey(expires uint64, id string) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), expires), id...)
}
