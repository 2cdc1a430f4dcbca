package prefill

import (
	"errors"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// ErrNoPrefillWorkers is returned, with Config.Enforce, for a request of a
// model that has no prefill worker available. It matches
// router.ErrNoInstances, so the HTTP layer answers 503.
var ErrNoPrefillWorkers = fmt.Errorf("prefill: no prefill worker is available and disaggregation is enforced (--enforce-disagg): %w", router.ErrNoInstances)

// ErrPrefillFailed is returned, with Config.Enforce, for a request whose
// prefill failed on every attempt. It matches router.ErrNoInstances (the
// HTTP layer answers 503) and is not migratable: the stage has used the
// request's retries on prefill workers already.
var ErrPrefillFailed = fmt.Errorf("prefill: the prefill failed on every prefill worker tried and disaggregation is enforced (--enforce-disagg): %w", router.ErrNoInstances)

// ErrNoDisaggregatedParams is a prefill worker's answer that does not say
// where its KV cache is: its first output has no disaggregated_params.
var ErrNoDisaggregatedParams = errors.New("prefill: the prefill worker's first output has no disaggregated_params")

// errPrefillEnded is a prefill stream that ended without an output.
var errPrefillEnded = errors.New("prefill: the prefill worker's stream ended without an output")

// ErrStopped is returned when the request was stopped or killed during
// its prefill: no decode request is sent.
var ErrStopped = fmt.Errorf("prefill: the request was stopped during its prefill: %w", runtime.ErrCancelled)

// errDecodeAborted ends a decode sub-request whose bootstrap prefill
// failed before the decode worker answered.
var errDecodeAborted = errors.New("prefill: decode aborted: its prefill failed")
