package discovery

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Run touches this store's files and deletes expired files of any store
// until ctx ends or the store is closed (nil). It returns ErrLeaseLost if a
// touch came too late to keep a key alive (the process stalled for longer
// than the TTL), since other processes may have swept the key.
func (f *File) Run(ctx context.Context) error {
	if err := f.Err(); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return err
		}
		return nil
	}
	ctx, cancel := f.runContext(ctx)
	defer cancel()
	t := time.NewTicker(f.touchInterval())
	defer t.Stop()
	for {
		if err := f.touch(ctx); err != nil {
			return err
		}
		f.sweep()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// touchInterval is how often Run touches and sweeps: TTL/3. (The reference
// system uses max(TTL/3, 1 s), the same for TTLs of 3 s and more; short test
// TTLs would expire between touches with the 1 s floor.)
func (f *File) touchInterval() time.Duration { return f.ttl / 3 }

// touch refreshes the mtime of every owned file. It declares the lease lost
// if an owned key went untouched for longer than the TTL.
func (f *File) touch(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil || f.life.ctx.Err() != nil {
		return nil // Run's ctx ended, or stopped by Close or Orphan
	}
	now := time.Now()
	for key, o := range f.owned {
		if now.Sub(o.touched) > f.ttl {
			f.log.Error("discovery: file store key expired before it was touched", "key", key, "age", now.Sub(o.touched))
			f.lose()
			return ErrLeaseLost
		}
		err := os.Chtimes(f.path(key), now, now)
		switch {
		case err == nil:
			o.touched = now
			f.owned[key] = o
		case errors.Is(err, fs.ErrNotExist):
			delete(f.owned, key) // deleted by another process
		default:
			f.log.Warn("discovery: file store touch", "key", key, "err", err)
		}
	}
	return nil
}

// sweep deletes the files (and stale temporary files) of any process whose
// mtime is older than the TTL.
func (f *File) sweep() {
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		f.log.Warn("discovery: file store sweep", "dir", f.dir, "err", err)
		return
	}
	now := time.Now()
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil || !info.Mode().IsRegular() || now.Sub(info.ModTime()) <= f.ttl {
			continue
		}
		f.removeExpired(filepath.Join(f.dir, ent.Name()))
	}
}

// removeExpired deletes path if its mtime is (still) older than the TTL.
// The check narrows, but cannot close, the race with a process that
// rewrites the key at the same moment: its new file may be removed, and its
// next touch then drops the key, as if it had been deleted.
func (f *File) removeExpired(path string) {
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() || time.Since(info.ModTime()) <= f.ttl {
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.log.Warn("discovery: file store sweep", "path", path, "err", err)
	}
}
