package pipeline

import (
	"context"
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/migration"
)

// WithMigrationCount returns ctx carrying n: the model's migration stage
// adds one to n each time it re-issues the request, so that the caller
// can report how many migrations a request took (the frontend's
// per-request log line). Pass it, or a context derived from it, to
// Model.Generate.
func WithMigrationCount(ctx context.Context, n *atomic.Int32) context.Context {
	return migration.WithCount(ctx, n)
}
