package router

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// ErrNoTarget is returned by Direct when the request names no instance.
var ErrNoTarget = errors.New("router: direct routing needs the request to name an instance (routing.backend_instance_id)")

// ErrTargetUnavailable is returned when the instance a request names is not
// among the available ones.
var ErrTargetUnavailable = errors.New("router: instance not available")

// Direct sends every request to the instance it names in
// Routing.BackendInstanceID. The push router sends such requests there
// whatever its policy; with Direct, a request that names none is refused.
type Direct struct{}

var _ Policy = Direct{}

// Pick returns the instance req names if it is a candidate.
func (Direct) Pick(req *backend.Request, candidates []uint64) (uint64, error) {
	if req.Routing == nil || req.Routing.BackendInstanceID == nil {
		return 0, ErrNoTarget
	}
	id := *req.Routing.BackendInstanceID
	if _, found := slices.BinarySearch(candidates, id); !found {
		return 0, fmt.Errorf("%w: instance_id=%x", ErrTargetUnavailable, id)
	}
	return id, nil
}
