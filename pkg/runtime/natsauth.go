package runtime

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/connfail"
)

// natsSecurity returns the nats.go options for the configured TLS and
// credentials. It reads the files at once, so that a missing or malformed
// one is reported before any connection attempt.
func natsSecurity(cfg Config) ([]nats.Option, error) {
	var opts []nats.Option
	tlsCfg, err := cfg.natsTLS()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, nats.Secure(tlsCfg))
	}
	a := cfg.NATSAuth
	switch {
	case a.Username != "":
		opts = append(opts, nats.UserInfo(a.Username, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	case a.NKey != "":
		opt, err := nkeyOption(a.NKey)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	case a.CredentialsFile != "":
		if err := checkCredentialsFile(a.CredentialsFile); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(a.CredentialsFile))
	}
	return opts, nil
}

// nkeyOption signs the server's nonce with the seed v, or with the seed in
// the file v. Errors never quote v unless it names a file: it may be the
// secret itself.
func nkeyOption(v string) (nats.Option, error) {
	v = strings.TrimSpace(v)
	if kp, err := nkeys.FromSeed([]byte(v)); err == nil {
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("runtime: nats: NATS_AUTH_NKEY: %w", err)
		}
		return nats.Nkey(pub, kp.Sign), nil
	}
	if _, err := os.Stat(v); err != nil && strings.HasPrefix(v, "S") && !strings.ContainsAny(v, `/\.`) {
		return nil, errors.New("runtime: nats: NATS_AUTH_NKEY is neither a valid nkey seed nor a file")
	}
	opt, err := nats.NkeyOptionFromSeed(v)
	if err != nil {
		return nil, fmt.Errorf("runtime: nats: NATS_AUTH_NKEY seed file: %w", err)
	}
	return opt, nil
}

// checkCredentialsFile reads a credentials file, which nats.go reads only
// when it connects, and checks that it holds a JWT and a user seed.
func checkCredentialsFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("runtime: nats: NATS_AUTH_CREDENTIALS_FILE: %w", err)
	}
	if _, err := nkeys.ParseDecoratedJWT(b); err != nil {
		return fmt.Errorf("runtime: nats: NATS_AUTH_CREDENTIALS_FILE %s: no user JWT: %w", path, err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(b)
	if err != nil {
		return fmt.Errorf("runtime: nats: NATS_AUTH_CREDENTIALS_FILE %s: no user seed: %w", path, err)
	}
	kp.Wipe()
	return nil
}

// permanentNATS returns err, from nats.Connect, as a *connfail.Error if
// retrying cannot cure it, nil otherwise.
func permanentNATS(err error) *connfail.Error {
	for _, auth := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired} {
		if errors.Is(err, auth) {
			return &connfail.Error{Problem: connfail.BadCredentials, Err: err}
		}
	}
	if errors.Is(err, nats.ErrSecureConnWanted) {
		return &connfail.Error{Problem: connfail.NotTLS, Reason: "the server does not offer TLS", Err: err}
	}
	return connfail.Classify(err)
}

// redactURLs hides the passwords of the comma-separated URLs in s.
func redactURLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				parts[i] = u.Redacted()
			} else {
				u.User = url.User("xxxxx") // a token
				parts[i] = u.String()
			}
		}
	}
	return strings.Join(parts, ",")
}

// NATSSecurityOptions returns the nats.go options for cfg's NATS TLS and
// credentials (NATS_* environment), for another connection of the
// process to the same server: the frontend's response store.
func NATSSecurityOptions(cfg Config) ([]nats.Option, error) { return natsSecurity(cfg) }
