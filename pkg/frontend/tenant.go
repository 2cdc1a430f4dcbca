package frontend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// errTenantLimit: the request's tenant has TenantMaxInflight requests in
// flight already.
var errTenantLimit = errors.New("too many requests in flight for this tenant")

// tenants counts each tenant's /v1 requests in flight, so that one
// tenant cannot fill the model's queue (Config.TenantMaxInflight).
type tenants struct {
	max    int
	header string

	mu       sync.Mutex
	inflight map[string]int
}

// tenantOf names r's tenant: its API key (by digest, never the key) when
// keys are configured, else the tenant header; "" when it has neither.
func (t *tenants) tenantOf(r *http.Request, keyed bool) string {
	if keyed {
		if key, ok := bearer(r.Header.Get("Authorization")); ok {
			d := sha256.Sum256([]byte(key))
			return "key:" + hex.EncodeToString(d[:8])
		}
	}
	return r.Header.Get(t.header)
}

// acquire counts a request of tenant in, or refuses it when the tenant is
// at its limit; release must follow a nil error. A request with no
// tenant, or with the limit off, is never refused.
func (t *tenants) acquire(tenant string) (release func(), err error) {
	if t == nil || t.max <= 0 || tenant == "" {
		return func() {}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight[tenant] >= t.max {
		return nil, fmt.Errorf("%w (%d): retry when one ends", errTenantLimit, t.max)
	}
	t.inflight[tenant]++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.inflight[tenant]--; t.inflight[tenant] <= 0 {
			delete(t.inflight, tenant)
		}
	}, nil
}
