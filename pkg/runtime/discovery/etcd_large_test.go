package discovery_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// A model card embeds its tokenizer: values of ~10 MB must go through.
func TestEtcdCarriesModelCardSizedValues(t *testing.T) {
	e := testenv.StartEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := discovery.NewEtcd(ctx, discovery.EtcdConfig{Endpoints: []string{e.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := bytes.Repeat([]byte("tokenizer "), 1<<20) // 10 MiB
	if err := s.Put(ctx, "v1/mdc/ns/c/e/1", big); err != nil {
		t.Fatalf("put 10 MiB: %v", err)
	}
	kvs, err := s.List(ctx, "v1/mdc/")
	if err != nil || len(kvs) != 1 || !bytes.Equal(kvs[0].Value, big) {
		t.Fatalf("list: %d entries, %v", len(kvs), err)
	}
}
