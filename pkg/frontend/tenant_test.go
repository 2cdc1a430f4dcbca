package frontend

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// A tenant at its limit of requests in flight gets 429 with Retry-After
// in the OpenAI error shape, while other tenants, and requests without a
// tenant, are served; when its streams end it is served again.
func TestTenantLimit(t *testing.T) {
	s := newStack(t, Config{TenantMaxInflight: 2}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 20*time.Millisecond))
	const long = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":60,"stream":true}`
	const short = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	post := func(tenant, body string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tenant != "" {
			req.Header.Set("x-dynamo-tenant", tenant)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var open []*http.Response
	for range 2 {
		resp := post("a", long)
		if resp.StatusCode != 200 {
			t.Fatalf("tenant a's stream: %d", resp.StatusCode)
		}
		if !bufio.NewScanner(resp.Body).Scan() {
			t.Fatal("no first chunk")
		}
		open = append(open, resp)
	}
	resp := post("a", short)
	e := errorInfo(t, readAll(t, resp))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || e.Type != "rate_limit_error" || !strings.Contains(e.Message, "tenant") {
		t.Errorf("tenant a's third request: %d, Retry-After %q, %+v; want 429 with Retry-After naming the tenant limit", resp.StatusCode, resp.Header.Get("Retry-After"), e)
	}
	for _, tenant := range []string{"b", ""} {
		if resp := post(tenant, short); resp.StatusCode != 200 {
			t.Errorf("tenant %q: %d, want 200", tenant, resp.StatusCode)
		} else {
			resp.Body.Close()
		}
	}
	for _, r := range open {
		readAll(t, r)
	}
	if resp := post("a", short); resp.StatusCode != 200 {
		t.Errorf("tenant a after its streams ended: %d, want 200", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// With API keys the tenant is the key (by digest, never the key itself),
// whatever the tenant header says; without keys it is the header.
func TestTenantOf(t *testing.T) {
	tn := newTenants(1, "x-dynamo-tenant")
	req := func(key, header string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		if header != "" {
			r.Header.Set("x-dynamo-tenant", header)
		}
		return r
	}
	k1, k2 := tn.tenantOf(req("sk-one", "x"), true), tn.tenantOf(req("sk-two", "x"), true)
	if k1 == k2 || !strings.HasPrefix(k1, "key:") || strings.Contains(k1, "sk-one") {
		t.Errorf("key tenants %q, %q: want distinct digests that do not show the key", k1, k2)
	}
	if got := tn.tenantOf(req("sk-one", "x"), false); got != "x" {
		t.Errorf("without keys: tenant %q, want the header's", got)
	}
	release, err := tn.acquire(k1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.acquire(k1); err == nil {
		t.Error("a second request of a tenant at limit 1 was admitted")
	}
	if r2, err := tn.acquire(k2); err != nil {
		t.Errorf("another key was refused: %v", err)
	} else {
		r2()
	}
	release()
	if len(tn.byName) != 0 {
		t.Errorf("counts left after release: %v", tn.byName)
	}
}

// A tenant's refusal says to retry when its oldest request in flight is
// expected to end, by the mean duration of its requests; at least a
// second; unknown (0) before any of its requests ended.
func TestTenantRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tn := newTenants(2, "x-dynamo-tenant")
		r1, _ := tn.acquire("a")
		r2, _ := tn.acquire("a")
		_, err := tn.acquire("a")
		var tl *tenantLimitError
		if !errors.As(err, &tl) || tl.retryAfter != 0 {
			t.Fatalf("refusal before any request ended: %v, want no estimate", err)
		}
		time.Sleep(10 * time.Second)
		r1() // took 10 s
		r3, _ := tn.acquire("a")
		time.Sleep(4 * time.Second)
		// In flight: r2 (14 s old), r3 (4 s old); requests take 10 s.
		if _, err := tn.acquire("a"); !errors.As(err, &tl) || tl.retryAfter != time.Second {
			t.Errorf("refusal with a request overdue: %v (%v), want 1 s", err, tl.retryAfter)
		}
		r2()
		// In flight: r3 (4 s old); mean 10 s + (14-10)/8 = 10.5 s.
		r4, _ := tn.acquire("a")
		if _, err := tn.acquire("a"); !errors.As(err, &tl) || tl.retryAfter != 6500*time.Millisecond {
			t.Errorf("refusal: %v (%v), want 6.5 s, when r3 is expected to end", err, tl.retryAfter)
		}
		r3()
		r4()
		if len(tn.byName) != 0 {
			t.Errorf("left over: %v", tn.byName)
		}
	})
}
