package frontend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// errTenantLimit: the request's tenant has TenantMaxInflight requests in
// flight already. Every *tenantLimitError matches it.
var errTenantLimit = errors.New("too many requests in flight for this tenant")

// maxTenantRetryAfter caps the Retry-After of a tenant's refusal.
const maxTenantRetryAfter = time.Minute

// tenantLimitError is a tenant's refusal, with when to retry.
type tenantLimitError struct {
	max int
	// retryAfter is when the tenant's oldest request in flight is
	// expected to end (see tenants.acquire); 0 when the tenant has no
	// ended request to go by yet.
	retryAfter time.Duration
}

func (e *tenantLimitError) Error() string {
	return fmt.Sprintf("%v (%d): retry when one ends", errTenantLimit, e.max)
}

func (e *tenantLimitError) Unwrap() error { return errTenantLimit }

// tenants counts each tenant's /v1 requests in flight, so that one
// tenant cannot fill the model's queue (Config.TenantMaxInflight).
type tenants struct {
	max    int
	header string

	mu     sync.Mutex
	byName map[string]*tenant
}

// tenant is one tenant's requests in flight and how long its requests
// take.
type tenant struct {
	starts []time.Time   // of its requests in flight, oldest first
	mean   time.Duration // moving mean of its requests' durations; 0: none ended yet
}

func newTenants(max int, header string) *tenants {
	return &tenants{max: max, header: header, byName: map[string]*tenant{}}
}

// tenantOf names r's tenant: its API key (by digest, never the key) when
// keys are configured, else the tenant header; "" when it has neither.
func (t *tenants) tenantOf(r *http.Request, keyed bool) string {
	if keyed {
		if key, ok := presentedKey(r); ok {
			d := sha256.Sum256([]byte(key))
			return "key:" + hex.EncodeToString(d[:8])
		}
	}
	return r.Header.Get(t.header)
}

// acquire counts a request of name in, or refuses it with a
// *tenantLimitError when the tenant is at its limit; release must follow
// a nil error. A request with no tenant, or with the limit off, is never
// refused.
//
// The refusal's Retry-After is when a slot of the tenant's is expected
// to free: its oldest request in flight started that long ago, and its
// requests take its mean duration (at least a second, at most a minute).
func (t *tenants) acquire(name string) (release func(), err error) {
	if t == nil || t.max <= 0 || name == "" {
		return func() {}, nil
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.byName[name]
	if tn == nil {
		tn = &tenant{}
		t.byName[name] = tn
	}
	if len(tn.starts) >= t.max {
		e := &tenantLimitError{max: t.max}
		if tn.mean > 0 {
			e.retryAfter = min(max(tn.starts[0].Add(tn.mean).Sub(now), time.Second), maxTenantRetryAfter)
		}
		return nil, e
	}
	tn.starts = append(tn.starts, now)
	return func() { t.release(name, now) }, nil
}

// release ends a request of name that started at start.
func (t *tenants) release(name string, start time.Time) {
	d := time.Since(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.byName[name]
	for i, s := range tn.starts {
		if s.Equal(start) {
			tn.starts = append(tn.starts[:i], tn.starts[i+1:]...)
			break
		}
	}
	if tn.mean == 0 {
		tn.mean = d
	} else {
		tn.mean += (d - tn.mean) / 8
	}
	if len(tn.starts) == 0 {
		// Keep what is known of the tenant's durations only while it
		// has requests in flight: the map does not grow with every
		// tenant ever seen.
		delete(t.byName, name)
	}
}
