package runtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/connfail"
)

// Errors of New that it does not retry, because retrying cannot cure them.
// The error New returns wraps one of them and names what to check.
var (
	// ErrAuthFailed: etcd or NATS refused the configured credentials (or
	// requires some and none were configured).
	ErrAuthFailed = connfail.ErrAuthFailed
	// ErrTLS: the TLS handshake with etcd or NATS failed: the server's
	// certificate is not trusted or not valid for its host, the server
	// refused (or missed) the client certificate, or one side does not
	// speak TLS.
	ErrTLS = connfail.ErrTLS
)

// TLSFiles names the PEM files of a TLS client. The zero value names none.
type TLSFiles struct {
	// CAFile holds the CA certificates that verify the server's
	// certificate (empty: the system's roots).
	CAFile string
	// CertFile and KeyFile are this client's certificate and private key,
	// for a server that verifies its clients (mutual TLS). Set both or
	// neither.
	CertFile, KeyFile string
}

// IsZero reports whether no file is named.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// NATSAuth is how the runtime authenticates to NATS. Set at most one
// method. The zero value sends no credentials (a user:password@ in the
// URL still does).
type NATSAuth struct {
	// Username and Password (NATS_AUTH_USERNAME, NATS_AUTH_PASSWORD): set
	// both or neither.
	Username, Password string
	// Token (NATS_AUTH_TOKEN) is an authorization token.
	Token string
	// NKey (NATS_AUTH_NKEY) is a user nkey seed ("SU..."), or the path of
	// a file that holds one.
	NKey string
	// CredentialsFile (NATS_AUTH_CREDENTIALS_FILE) is a user credentials
	// file (a user JWT and its nkey seed, as nsc writes it).
	CredentialsFile string
}

// String names the method that is set and hides every secret, so that a
// printed Config does not leak them.
func (a NATSAuth) String() string {
	var set []string
	if a.Username != "" || a.Password != "" {
		set = append(set, "user "+a.Username+" with password")
	}
	if a.Token != "" {
		set = append(set, "token")
	}
	if a.NKey != "" {
		set = append(set, "nkey")
	}
	if a.CredentialsFile != "" {
		set = append(set, "credentials file "+a.CredentialsFile)
	}
	if len(set) == 0 {
		return "none"
	}
	return strings.Join(set, ", ")
}

// vars names the environment variables of the method that is set.
func (a NATSAuth) vars() string {
	switch {
	case a.Username != "" || a.Password != "":
		return "NATS_AUTH_USERNAME / NATS_AUTH_PASSWORD"
	case a.Token != "":
		return "NATS_AUTH_TOKEN"
	case a.NKey != "":
		return "NATS_AUTH_NKEY"
	case a.CredentialsFile != "":
		return "NATS_AUTH_CREDENTIALS_FILE"
	}
	return ""
}

// settings names the environment variables behind one server's
// connection settings, for the errors that tell the user what to check.
type settings struct {
	server      string // the server URL(s)
	credentials string // empty if none are configured
	anyCreds    string // what to set when none are configured
	ca, cert    string
}

func (c Config) etcdSettings() settings {
	s := settings{
		server:   "ETCD_ENDPOINTS",
		anyCreds: "ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD",
		ca:       "ETCD_AUTH_CA",
		cert:     "ETCD_AUTH_CLIENT_CERT / ETCD_AUTH_CLIENT_KEY",
	}
	if c.EtcdUsername != "" || c.EtcdPassword != "" {
		s.credentials = s.anyCreds
	}
	return s
}

func (c Config) natsSettings() settings {
	return settings{
		server:      "NATS_SERVER",
		credentials: c.NATSAuth.vars(),
		anyCreds:    "one of NATS_AUTH_USERNAME / NATS_AUTH_PASSWORD, NATS_AUTH_TOKEN, NATS_AUTH_NKEY, NATS_AUTH_CREDENTIALS_FILE",
		ca:          "NATS_TLS_CA",
		cert:        "NATS_TLS_CERT / NATS_TLS_KEY",
	}
}

// connectError wraps err, from connecting to what (e.g. "etcd at [...]"),
// and, if retrying cannot cure it, says which settings to check.
func connectError(what string, err error, s settings) error {
	var he *connfail.Error
	if !errors.As(err, &he) {
		return fmt.Errorf("runtime: %s: %w", what, err)
	}
	var hint string
	switch he.Problem {
	case connfail.BadCredentials:
		if s.credentials == "" {
			hint = "the server requires credentials: set " + s.anyCreds
		} else {
			hint = "check " + s.credentials
		}
	case connfail.UntrustedServer:
		hint = "check " + s.ca
	case connfail.WrongHost:
		hint = "check " + s.server + ": its host must be named in the server's certificate"
	case connfail.RefusedByServer:
		hint = "check " + s.cert
	default:
		hint = "check " + s.server + " and the TLS settings: both sides must speak TLS, or neither"
	}
	return fmt.Errorf("runtime: %s: %w: %s", what, he, hint)
}

// validateAuth reports every inconsistent credential or TLS setting.
func (c Config) validateAuth() error {
	var errs []error
	if (c.EtcdUsername == "") != (c.EtcdPassword == "") {
		errs = append(errs, errors.New("runtime: etcd: set both ETCD_AUTH_USERNAME and ETCD_AUTH_PASSWORD, or neither"))
	}
	errs = append(errs, c.EtcdTLS.validate("etcd", "ETCD_AUTH_CLIENT_CERT", "ETCD_AUTH_CLIENT_KEY"))
	if !c.EtcdTLS.IsZero() {
		for _, ep := range c.EtcdEndpoints {
			if strings.HasPrefix(ep, "http://") {
				errs = append(errs, fmt.Errorf("runtime: etcd endpoint %q: the etcd TLS files are set: use https://", ep))
			}
		}
	}
	errs = append(errs, c.NATSTLS.validate("nats", "NATS_TLS_CERT", "NATS_TLS_KEY"))
	a := c.NATSAuth
	if (a.Username == "") != (a.Password == "") {
		errs = append(errs, errors.New("runtime: nats: set both NATS_AUTH_USERNAME and NATS_AUTH_PASSWORD, or neither"))
	}
	if n := countSet(a.Username+a.Password, a.Token, a.NKey, a.CredentialsFile); n > 1 {
		errs = append(errs, fmt.Errorf("runtime: nats: %s: set only one authentication method", a))
	}
	return errors.Join(errs...)
}

// validate reports a client certificate without its key, or the reverse.
func (f TLSFiles) validate(server, certVar, keyVar string) error {
	switch {
	case f.CertFile != "" && f.KeyFile == "":
		return fmt.Errorf("runtime: %s TLS: client certificate %s without its key (%s)", server, certVar, keyVar)
	case f.CertFile == "" && f.KeyFile != "":
		return fmt.Errorf("runtime: %s TLS: client key %s without its certificate (%s)", server, keyVar, certVar)
	}
	return nil
}

func countSet(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}
