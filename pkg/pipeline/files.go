package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// fetchTimeout bounds the fetch of one file from one worker.
const fetchTimeout = 60 * time.Second

// fileFetcher fetches model files from the files endpoint of a model's
// workers (modelcard.FilesEndpoint), through a content-addressed cache.
type fileFetcher struct {
	rt    *runtime.DistributedRuntime
	cache *fileCache
	log   *slog.Logger
}

// fetch returns the file named f from the cache, or from one of the
// workers, trying each in turn, from first on, until one answers with
// contents that match f's size and checksum. A worker that fails or sends
// a mismatch is logged and the next one is tried; when all fail, the
// errors are joined.
func (ff *fileFetcher) fetch(ctx context.Context, ep runtime.EndpointID, workers []uint64, f *modelcard.File) ([]byte, error) {
	if b, ok := ff.cache.get(f.Checksum); ok {
		return b, nil
	}
	if len(workers) == 0 {
		return nil, errors.New("no worker to fetch from")
	}
	ep.Name = modelcard.FilesEndpoint
	client, err := ff.rt.Endpoint(ep).Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("files endpoint %s: %w", ep.Path(), err)
	}
	var errs []error
	for _, id := range workers {
		start := time.Now()
		b, err := ff.fetchFrom(ctx, client, id, f)
		if err == nil {
			ff.log.Info("pipeline: model file fetched", "file", f.Path, "bytes", len(b), "worker", fmt.Sprintf("%x", id), "took", time.Since(start).Round(time.Millisecond))
			return ff.cache.put(f.Checksum, b), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ff.log.Warn("pipeline: fetching a model file from a worker failed; trying another", "file", f.Path, "checksum", f.Checksum, "worker", fmt.Sprintf("%x", id), "err", err)
		errs = append(errs, fmt.Errorf("worker %x: %w", id, err))
	}
	return nil, errors.Join(errs...)
}

// fetchFrom fetches f from one worker, resuming after a broken stream as
// long as each attempt makes progress.
func (ff *fileFetcher) fetchFrom(ctx context.Context, client *runtime.Client, id uint64, f *modelcard.File) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	if err := waitListed(ctx, client, id); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, f.Size)
	for {
		before := len(buf)
		err := ff.call(ctx, client, id, f, &buf)
		if err == nil {
			break
		}
		if len(buf) == before || ctx.Err() != nil {
			return nil, err
		}
	}
	if int64(len(buf)) != f.Size {
		return nil, fmt.Errorf("%w: got %d bytes of %s, the card says %d", modelcard.ErrChecksum, len(buf), f.Path, f.Size)
	}
	probe := *f
	if err := probe.SetContents(buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// call streams f from offset len(*buf) on into *buf.
func (ff *fileFetcher) call(ctx context.Context, client *runtime.Client, id uint64, f *modelcard.File, buf *[]byte) error {
	payload, err := json.Marshal(modelcard.FileRequest{Checksum: f.Checksum, Offset: int64(len(*buf))})
	if err != nil {
		return err
	}
	rc := runtime.NewContext(ctx, "")
	defer rc.Release()
	return client.Call(rc, id, payload, func(item []byte) error {
		var c modelcard.FileChunk
		if err := json.Unmarshal(item, &c); err != nil {
			return fmt.Errorf("bad file chunk: %w", err)
		}
		switch {
		case c.Error != "":
			return errors.New(c.Error)
		case c.Offset != int64(len(*buf)):
			return fmt.Errorf("file chunk at offset %d, want %d", c.Offset, len(*buf))
		case c.Size != f.Size || c.Offset+int64(len(c.Data)) > f.Size:
			return fmt.Errorf("%w: worker's %s is %d bytes, the card says %d", modelcard.ErrChecksum, f.Path, c.Size, f.Size)
		}
		*buf = append(*buf, c.Data...)
		return nil
	})
}

// waitListed waits until discovery lists worker id on the files endpoint
// (its card may be seen before its files endpoint record).
func waitListed(ctx context.Context, client *runtime.Client, id uint64) error {
	for {
		changed := client.Changed()
		for _, have := range client.InstanceIDs() {
			if have == id {
				return nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("the worker serves no files endpoint: %w", context.Cause(ctx))
		}
	}
}

// fileCache holds model files by checksum: one copy however many models
// and workers name it. Files in use by a served model stay; files no
// longer in use are kept, oldest released first out, while they total at
// most idleLimit bytes, so that a model whose workers restart loads
// without a fetch.
type fileCache struct {
	idleLimit int64

	mu      sync.Mutex
	entries map[string]*cacheEntry
	idle    int64 // bytes of entries with refs == 0
}

type cacheEntry struct {
	data     []byte
	refs     int
	released time.Time
}

func newFileCache(idleLimit int64) *fileCache {
	return &fileCache{idleLimit: idleLimit, entries: map[string]*cacheEntry{}}
}

func (c *fileCache) get(sum string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[sum]
	if !ok {
		return nil, false
	}
	return e.data, true
}

// put stores b under sum (unreferenced) and returns the cached copy.
func (c *fileCache) put(sum string, b []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[sum]; ok {
		return e.data
	}
	c.entries[sum] = &cacheEntry{data: b, released: time.Now()}
	c.idle += int64(len(b))
	c.evict()
	return b
}

// acquire marks the files of a served model as in use.
func (c *fileCache) acquire(sums []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range sums {
		if e, ok := c.entries[s]; ok {
			if e.refs == 0 {
				c.idle -= int64(len(e.data))
			}
			e.refs++
		}
	}
}

// release ends one acquire of the files.
func (c *fileCache) release(sums []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, s := range sums {
		if e, ok := c.entries[s]; ok && e.refs > 0 {
			e.refs--
			if e.refs == 0 {
				e.released = now
				c.idle += int64(len(e.data))
			}
		}
	}
	c.evict()
}

// evict drops the oldest unreferenced entries while idle bytes exceed the
// limit. Called with mu held.
func (c *fileCache) evict() {
	for c.idle > c.idleLimit {
		var oldest string
		for s, e := range c.entries {
			if e.refs == 0 && (oldest == "" || e.released.Before(c.entries[oldest].released)) {
				oldest = s
			}
		}
		if oldest == "" {
			return
		}
		c.idle -= int64(len(c.entries[oldest].data))
		delete(c.entries, oldest)
	}
}

// stats returns the number of cached files and their total size.
func (c *fileCache) stats() (files int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		files++
		bytes += int64(len(e.data))
	}
	return files, bytes
}
