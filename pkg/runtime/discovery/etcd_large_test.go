package discovery_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// Every store takes values up to MaxValueSize, which a stock etcd (default
// request limit) accepts, and refuses larger ones with ErrValueTooLarge
// before they reach the server.
func TestStoresLimitValueSize(t *testing.T) {
	e := testenv.StartEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	etcd, err := discovery.NewEtcd(ctx, discovery.EtcdConfig{Endpoints: []string{e.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	file, err := discovery.NewFile(discovery.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	stores := map[string]discovery.Store{"etcd": etcd, "file": file, "mem": discovery.NewMemSpace().NewStore()}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			limit := bytes.Repeat([]byte("x"), discovery.MaxValueSize)
			if err := s.Put(ctx, "v1/test/limit", limit); err != nil {
				t.Fatalf("put of MaxValueSize bytes: %v", err)
			}
			kvs, err := s.List(ctx, "v1/test/")
			if err != nil || len(kvs) != 1 || !bytes.Equal(kvs[0].Value, limit) {
				t.Fatalf("list: %d entries, %v", len(kvs), err)
			}
			over := append(limit, 'x')
			if err := s.Put(ctx, "v1/test/over", over); !errors.Is(err, discovery.ErrValueTooLarge) {
				t.Errorf("put of MaxValueSize+1 bytes = %v, want ErrValueTooLarge", err)
			}
			if err := s.Create(ctx, "v1/test/over", over); !errors.Is(err, discovery.ErrValueTooLarge) {
				t.Errorf("create of MaxValueSize+1 bytes = %v, want ErrValueTooLarge", err)
			}
		})
	}
}
