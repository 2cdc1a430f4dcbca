package migration

import (
	"context"
	"sync/atomic"
)

// countKey carries a request's migration count (WithCount).
type countKey struct{}

// WithCount returns ctx carrying n: the stage adds one to n each time it
// re-issues the request (a migration), so that its caller can report how
// many a request took (the frontend's per-request log line). Pass the
// returned context, or one derived from it, to Generate.
func WithCount(ctx context.Context, n *atomic.Int32) context.Context {
	return context.WithValue(ctx, countKey{}, n)
}

// countMigration adds one to the count ctx carries, if any.
func countMigration(ctx context.Context) {
	if n, ok := ctx.Value(countKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
}
