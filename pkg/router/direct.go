package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrNoTarget is returned by Direct when the request names no instance.
var ErrNoTarget = errors.New("router: direct routing needs an instance id (WithInstance)")

// ErrTargetUnavailable is returned by Direct when the named instance is not
// among the available ones.
var ErrTargetUnavailable = errors.New("router: instance not available")

type targetKey struct{}

// WithInstance returns a context that asks the Direct policy for instance
// id. Derive the request's runtime.Context from it.
func WithInstance(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, targetKey{}, id)
}

// InstanceFrom returns the instance id set by WithInstance.
func InstanceFrom(ctx context.Context) (uint64, bool) {
	id, ok := ctx.Value(targetKey{}).(uint64)
	return id, ok
}

// Direct sends every request to the instance its context names.
type Direct struct{}

var _ Policy = Direct{}

// Pick returns the instance named by the context if it is a candidate.
func (Direct) Pick(ctx context.Context, candidates []uint64) (uint64, error) {
	id, ok := InstanceFrom(ctx)
	if !ok {
		return 0, ErrNoTarget
	}
	if _, found := slices.BinarySearch(candidates, id); !found {
		return 0, fmt.Errorf("%w: instance_id=%x", ErrTargetUnavailable, id)
	}
	return id, nil
}
