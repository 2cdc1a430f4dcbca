package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// NewUserNKey makes a NATS user nkey and returns its seed (the secret a
// client signs with, "SU...") and its public key (what the server
// trusts, "U...").
func NewUserNKey(t testing.TB) (seed, public string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatalf("testenv: nkey: %v", err)
	}
	s, err := kp.Seed()
	if err != nil {
		t.Fatalf("testenv: nkey: %v", err)
	}
	p, err := kp.PublicKey()
	if err != nil {
		t.Fatalf("testenv: nkey: %v", err)
	}
	return string(s), p
}

// secure applies the TLS and authentication options to opts.
func (n *NATS) secure(opts *server.Options) error {
	o := n.opts
	if c := o.TLS; c != nil {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: c.CertFile, KeyFile: c.KeyFile, CaFile: c.CAFile, Verify: o.VerifyClients,
		})
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		opts.TLSConfig, opts.TLS, opts.TLSVerify, opts.TLSTimeout = tc, true, o.VerifyClients, 2
	}
	opts.Authorization = o.Token
	opts.Username, opts.Password = o.Username, o.Password
	if o.NKey != "" {
		opts.Nkeys = []*server.NkeyUser{{Nkey: o.NKey}}
	}
	if op := n.operator; op != nil {
		opts.TrustedKeys = []string{op.public}
		opts.AccountResolver = op.resolver
	}
	return nil
}

// operator is an ephemeral NATS operator with one account and one user.
type operator struct {
	public    string                 // the operator's public key, trusted by the server
	resolver  *server.MemAccResolver // holds the account's JWT
	credsFile string                 // the user's JWT and seed
}

func newOperator(dir string) (*operator, error) {
	okp, err := nkeys.CreateOperator()
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	opub, _ := okp.PublicKey()
	akp, err := nkeys.CreateAccount()
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	apub, _ := akp.PublicKey()
	ajwt, err := jwt.NewAccountClaims(apub).Encode(okp)
	if err != nil {
		return nil, fmt.Errorf("operator: account JWT: %w", err)
	}
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	upub, _ := ukp.PublicKey()
	useed, _ := ukp.Seed()
	ujwt, err := jwt.NewUserClaims(upub).Encode(akp)
	if err != nil {
		return nil, fmt.Errorf("operator: user JWT: %w", err)
	}
	creds, err := jwt.FormatUserConfig(ujwt, useed)
	if err != nil {
		return nil, fmt.Errorf("operator: credentials: %w", err)
	}
	op := &operator{public: opub, resolver: &server.MemAccResolver{}, credsFile: filepath.Join(dir, "user.creds")}
	if err := op.resolver.Store(apub, ajwt); err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	if err := os.WriteFile(op.credsFile, creds, 0o600); err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	return op, nil
}
