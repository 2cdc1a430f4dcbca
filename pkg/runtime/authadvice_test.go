package runtime

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Each refusal names the settings to check; anything else gets no advice.
func TestAuthAdvice(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want []string // in the advice; none: no advice
	}{
		{errors.New("etcdserver: permission denied"), []string{"ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD", "v1/", "client-certificate auth (ETCD_AUTH_CLIENT_CERT) needs a user too"}},
		{fmt.Errorf("discovery: put v1/instances/x: %w", errors.New("rpc error: code = PermissionDenied desc = etcdserver: permission denied")), []string{"lack of permission", "ETCD_AUTH_USERNAME"}},
		{errors.New("etcdserver: authentication failed, invalid user ID or password"), []string{"refused the user name or password", "ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD"}},
		{errors.New("etcdserver: user name is empty"), []string{"no user was given", "set ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD", "needs a user too"}},
		{errors.New("nats: Authorization Violation"), []string{"NATS refused the credentials", "NATS_AUTH_USERNAME / NATS_AUTH_PASSWORD", "NATS_AUTH_TOKEN", "NATS_AUTH_NKEY", "NATS_AUTH_CREDENTIALS_FILE", "NATS_SERVER"}},
		{errors.New("nats: authorization violation"), []string{"NATS refused the credentials"}},
		{errors.New("nats: authentication expired"), []string{"NATS_AUTH_CREDENTIALS_FILE"}},
		{errors.New(`nats: permissions violation for publish to "x"`), []string{"permissions for the user", "NATS_AUTH_USERNAME"}},
		// Already advised (New's connect errors), or no refusal at all.
		{errors.New("runtime: etcd at [x]: authentication failed: etcdserver: authentication failed, invalid user ID or password: check ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD"), nil},
		{errors.New("context deadline exceeded"), nil},
		{nil, nil},
	} {
		got := authAdvice(tc.err)
		if len(tc.want) == 0 && got != "" {
			t.Errorf("authAdvice(%v) = %q, want none", tc.err, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("authAdvice(%v) = %q, lacks %q", tc.err, got, w)
			}
		}
	}
}

func TestWithAuthAdvice(t *testing.T) {
	base := errors.New("etcdserver: permission denied")
	err := WithAuthAdvice(base)
	if !errors.Is(err, base) || !strings.HasPrefix(err.Error(), "etcdserver: permission denied: etcd refused the request") {
		t.Errorf("WithAuthAdvice = %v", err)
	}
	plain := errors.New("connection refused")
	if WithAuthAdvice(plain) != plain {
		t.Error("WithAuthAdvice changed an error without advice")
	}
	if WithAuthAdvice(nil) != nil {
		t.Error("WithAuthAdvice(nil) != nil")
	}
}
