package runtime

import (
	"fmt"
	"strings"
)

// authAdvice returns what to check when err is etcd's or NATS's refusal
// of the credentials or of a request for lack of permission, and "" when
// it is not one, or when err already names the settings (the connect
// errors of New do). It reads err's text: gRPC and nats.go hand such
// refusals up as text ("etcdserver: permission denied", "nats:
// authorization violation"), and a refusal met after start-up (a key
// write, a subscription) reaches the caller without New's advice.
func authAdvice(err error) string {
	if err == nil {
		return ""
	}
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "etcd_auth_") || strings.Contains(msg, "nats_auth_") {
		return "" // already advised
	}
	const (
		etcdCreds  = "ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD"
		etcdCert   = "client-certificate auth (ETCD_AUTH_CLIENT_CERT) needs a user too: etcd takes the certificate's common name as the user when ETCD_AUTH_USERNAME is unset"
		natsCreds  = "NATS_AUTH_USERNAME / NATS_AUTH_PASSWORD, NATS_AUTH_TOKEN, NATS_AUTH_NKEY or NATS_AUTH_CREDENTIALS_FILE (one of them; a user:password@ in NATS_SERVER counts too)"
		etcdPrefix = "v1/"
	)
	switch {
	case strings.Contains(msg, "etcdserver: user name is empty"):
		return "etcd has authentication enabled and no user was given: set " + etcdCreds + "; " + etcdCert
	case strings.Contains(msg, "etcdserver: authentication failed"):
		return "etcd refused the user name or password: check " + etcdCreds
	case strings.Contains(msg, "etcdserver: permission denied"):
		return fmt.Sprintf("etcd refused the request for lack of permission: check %s: the user needs a role with read-write access to the keys under %s; %s",
			etcdCreds, etcdPrefix, etcdCert)
	case strings.Contains(msg, "authorization violation"),
		strings.Contains(msg, "nats: authentication expired"),
		strings.Contains(msg, "nats: authentication revoked"),
		strings.Contains(msg, "nats: account authentication expired"):
		return "NATS refused the credentials: check " + natsCreds
	case strings.Contains(msg, "permissions violation"):
		return "NATS refused a subject to this user: check the server's permissions for the user of " + natsCreds
	}
	return ""
}

// WithAuthAdvice returns err with authAdvice's advice appended, or err
// itself when there is none. The result wraps err.
func WithAuthAdvice(err error) error {
	if advice := authAdvice(err); advice != "" {
		return fmt.Errorf("%w: %s", err, advice)
	}
	return err
}
