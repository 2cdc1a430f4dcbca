package runtime_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// pki is what a secured deployment hands out: a CA, the servers'
// certificate and a client certificate, all issued by the CA.
type pki struct {
	ca             *testenv.CA
	server, client testenv.Certs
}

func newPKI(t *testing.T) pki {
	ca := testenv.NewCA(t)
	return pki{ca: ca, server: ca.Server(t), client: ca.Issue(t, "client")}
}

// files are the TLS files of a client that trusts the CA and presents the
// client certificate.
func (p pki) files() runtime.TLSFiles {
	return runtime.TLSFiles{CAFile: p.ca.File, CertFile: p.client.CertFile, KeyFile: p.client.KeyFile}
}

// baseConfig is a runtime configuration for one process of a test.
func baseConfig() runtime.Config {
	return runtime.Config{
		TCPHost:            "127.0.0.1",
		ResponseStreamHost: "127.0.0.1",
		ConnectTimeout:     20 * time.Second,
		DrainTimeout:       5 * time.Second,
		GracePeriod:        200 * time.Millisecond,
		SystemPort:         runtime.SystemPortDisabled,
	}
}

// TestSecureControlPlane runs a worker and a caller against etcd and NATS
// that both require TLS with client certificates and a password: the
// worker registers in etcd, the caller discovers it and calls it over the
// NATS request plane. The etcd user may use only the keys under v1/, the
// permission docs/operations.md tells operators to grant.
func TestSecureControlPlane(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	etcd := testenv.StartEtcdWith(t, testenv.EtcdOptions{
		TLS: &p.server, ClientCertAuth: true, Users: map[string]string{"dynamo": "etcd-secret"}, Prefix: "v1/",
	})
	nats := testenv.StartNATSWith(t, testenv.NATSOptions{
		TLS: &p.server, VerifyClients: true, Username: "dynamo", Password: "nats-secret",
	})
	if !strings.HasPrefix(etcd.URL, "https://127.0.0.1:") || !strings.HasPrefix(nats.URL, "tls://127.0.0.1:") {
		t.Fatalf("servers at %s and %s: want https:// and tls://", etcd.URL, nats.URL)
	}
	cfg := baseConfig()
	cfg.Discovery, cfg.RequestPlane = runtime.DiscoveryEtcd, runtime.PlaneNATS
	cfg.EtcdEndpoints = []string{etcd.URL}
	cfg.EtcdUsername, cfg.EtcdPassword = "dynamo", "etcd-secret"
	cfg.EtcdTLS = p.files()
	cfg.NATSServer = nats.URL
	cfg.NATSAuth = runtime.NATSAuth{Username: "dynamo", Password: "nats-secret"}
	cfg.NATSTLS = p.files()

	worker, caller := startRuntime(t, cfg, nil), startRuntime(t, cfg, nil)
	serve(t, worker, newCounter())
	cl := client(t, caller, 1)
	got, err := collect(runtime.NewContext(t.Context(), "secure"), cl, worker.InstanceID(), countRequest{N: 100}, nil)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	checkSequence(t, got, 100)
	// The ordered shutdown deletes the worker's keys and revokes its lease,
	// which the user may do only for keys it may write.
	if err := worker.stop(t); err != nil {
		t.Errorf("worker shutdown: %v", err)
	}
	testenv.WaitFor(t, 10*time.Second, "the worker to leave discovery", func() bool { return len(cl.InstanceIDs()) == 0 })
}

// TestNATSAuthMethods connects with each way of authenticating to NATS.
func TestNATSAuthMethods(t *testing.T) {
	t.Parallel()
	seed, public := testenv.NewUserNKey(t)
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, []byte(seed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newPKI(t)
	operator := testenv.StartNATSWith(t, testenv.NATSOptions{Operator: true})
	for _, tc := range []struct {
		name   string
		server testenv.NATSOptions
		auth   runtime.NATSAuth
		url    string // default: the server's
		tls    runtime.TLSFiles
	}{
		{name: "token", server: testenv.NATSOptions{Token: "s3cret"}, auth: runtime.NATSAuth{Token: "s3cret"}},
		{name: "user and password", server: testenv.NATSOptions{Username: "u", Password: "p"}, auth: runtime.NATSAuth{Username: "u", Password: "p"}},
		{name: "nkey seed", server: testenv.NATSOptions{NKey: public}, auth: runtime.NATSAuth{NKey: seed}},
		{name: "nkey seed file", server: testenv.NATSOptions{NKey: public}, auth: runtime.NATSAuth{NKey: seedFile}},
		{name: "credentials file", url: operator.URL, auth: runtime.NATSAuth{CredentialsFile: operator.CredentialsFile}},
		{name: "TLS and token", server: testenv.NATSOptions{TLS: &p.server, Token: "s3cret"}, auth: runtime.NATSAuth{Token: "s3cret"},
			tls: runtime.TLSFiles{CAFile: p.ca.File}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig()
			cfg.Discovery, cfg.RequestPlane = runtime.DiscoveryMem, runtime.PlaneNATS
			cfg.NATSServer, cfg.NATSAuth, cfg.NATSTLS = tc.url, tc.auth, tc.tls
			if cfg.NATSServer == "" {
				cfg.NATSServer = testenv.StartNATSWith(t, tc.server).URL
			}
			rt, err := runtime.New(t.Context(), cfg, runtime.Deps{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRefusedStartupFailsFastAndClearly checks that a refused password or
// certificate ends New at once (not after the 60 s connect timeout) with
// an error that says what failed and which settings to check.
func TestRefusedStartupFailsFastAndClearly(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	other := newPKI(t) // a CA the servers do not trust, and that did not sign them
	etcd := testenv.StartEtcdWith(t, testenv.EtcdOptions{
		TLS: &p.server, ClientCertAuth: true, Users: map[string]string{"dynamo": "etcd-secret"},
	})
	nats := testenv.StartNATSWith(t, testenv.NATSOptions{TLS: &p.server, VerifyClients: true, Token: "nats-secret"})
	plainNATS := testenv.StartNATS(t)

	etcdConfig := func(user, password string, files runtime.TLSFiles) runtime.Config {
		cfg := baseConfig()
		cfg.EtcdEndpoints = []string{etcd.URL}
		cfg.EtcdUsername, cfg.EtcdPassword, cfg.EtcdTLS = user, password, files
		return cfg
	}
	natsConfig := func(url, token string, files runtime.TLSFiles) runtime.Config {
		cfg := baseConfig()
		cfg.Discovery, cfg.RequestPlane = runtime.DiscoveryMem, runtime.PlaneNATS
		cfg.NATSServer, cfg.NATSAuth.Token, cfg.NATSTLS = url, token, files
		return cfg
	}
	for _, tc := range []struct {
		name string
		cfg  runtime.Config
		is   error
		want []string // substrings of the error
	}{
		{
			name: "etcd wrong password",
			cfg:  etcdConfig("dynamo", "wrong", p.files()),
			is:   runtime.ErrAuthFailed,
			want: []string{"runtime: etcd at [" + etcd.URL + "]: authentication failed", "check ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD"},
		},
		{
			name: "etcd no user",
			cfg:  etcdConfig("", "", p.files()),
			is:   runtime.ErrAuthFailed,
			want: []string{"authentication failed: etcd has authentication enabled and no user was given", "the server requires credentials: set ETCD_AUTH_USERNAME / ETCD_AUTH_PASSWORD"},
		},
		{
			name: "etcd untrusted server certificate",
			cfg:  etcdConfig("dynamo", "etcd-secret", runtime.TLSFiles{CAFile: other.ca.File, CertFile: p.client.CertFile, KeyFile: p.client.KeyFile}),
			is:   runtime.ErrTLS,
			want: []string{"runtime: etcd at [" + etcd.URL + "]: TLS: server certificate not trusted", "certificate signed by unknown authority", "check ETCD_AUTH_CA"},
		},
		{
			name: "etcd no client certificate",
			cfg:  etcdConfig("dynamo", "etcd-secret", runtime.TLSFiles{CAFile: p.ca.File}),
			is:   runtime.ErrTLS,
			want: []string{"TLS: the server refused the handshake", "check ETCD_AUTH_CLIENT_CERT / ETCD_AUTH_CLIENT_KEY"},
		},
		{
			name: "etcd client certificate of another CA",
			cfg:  etcdConfig("dynamo", "etcd-secret", runtime.TLSFiles{CAFile: p.ca.File, CertFile: other.client.CertFile, KeyFile: other.client.KeyFile}),
			is:   runtime.ErrTLS,
			want: []string{"TLS: the server refused the handshake", "check ETCD_AUTH_CLIENT_CERT / ETCD_AUTH_CLIENT_KEY"},
		},
		{
			name: "nats wrong token",
			cfg:  natsConfig(nats.URL, "wrong", p.files()),
			is:   runtime.ErrAuthFailed,
			want: []string{"runtime: nats at " + nats.URL + ": authentication failed: nats: Authorization Violation", "check NATS_AUTH_TOKEN"},
		},
		{
			name: "nats no credentials",
			cfg:  natsConfig(nats.URL, "", p.files()),
			is:   runtime.ErrAuthFailed,
			want: []string{"authentication failed", "the server requires credentials: set one of NATS_AUTH_USERNAME"},
		},
		{
			name: "nats untrusted server certificate",
			cfg:  natsConfig(nats.URL, "nats-secret", runtime.TLSFiles{CAFile: other.ca.File, CertFile: p.client.CertFile, KeyFile: p.client.KeyFile}),
			is:   runtime.ErrTLS,
			want: []string{"TLS: server certificate not trusted", "certificate signed by unknown authority", "check NATS_TLS_CA"},
		},
		{
			name: "nats no client certificate",
			cfg:  natsConfig(nats.URL, "nats-secret", runtime.TLSFiles{CAFile: p.ca.File}),
			is:   runtime.ErrTLS,
			want: []string{"TLS: the server refused the handshake", "check NATS_TLS_CERT / NATS_TLS_KEY"},
		},
		{
			name: "nats server without TLS",
			cfg:  natsConfig(plainNATS.URL, "", runtime.TLSFiles{CAFile: p.ca.File}),
			is:   runtime.ErrTLS,
			want: []string{"TLS: the server does not offer TLS", "check NATS_SERVER"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.ConnectTimeout = time.Minute
			start := time.Now()
			rt, err := runtime.New(t.Context(), tc.cfg, runtime.Deps{})
			took := time.Since(start)
			if err == nil {
				rt.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q does not match %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if took > 10*time.Second {
				t.Errorf("New took %s to fail: it retried what retrying cannot cure", took.Round(time.Millisecond))
			}
			t.Logf("after %s: %v", took.Round(time.Millisecond), err)
		})
	}
}

// TestUnreachableServersAreRetried checks that a server that does not
// answer is not mistaken for a refusal: New keeps trying until the
// connect timeout, for start-up ordering.
func TestUnreachableServersAreRetried(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	const timeout = 1500 * time.Millisecond
	etcdCfg := baseConfig()
	etcdCfg.EtcdEndpoints = []string{"https://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))}
	etcdCfg.EtcdTLS = p.files()
	natsCfg := baseConfig()
	natsCfg.Discovery, natsCfg.RequestPlane = runtime.DiscoveryMem, runtime.PlaneNATS
	natsCfg.NATSServer, natsCfg.NATSAuth.Token, natsCfg.NATSTLS = "tls://127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), "secret", p.files()
	for name, cfg := range map[string]runtime.Config{"etcd": etcdCfg, "nats": natsCfg} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg.ConnectTimeout = timeout
			start := time.Now()
			rt, err := runtime.New(t.Context(), cfg, runtime.Deps{})
			if err == nil {
				rt.Close()
				t.Fatal("New succeeded")
			}
			if took := time.Since(start); took < timeout {
				t.Errorf("New gave up after %s, before the connect timeout: %v", took, err)
			}
			if errors.Is(err, runtime.ErrAuthFailed) || errors.Is(err, runtime.ErrTLS) {
				t.Errorf("unreachable server reported as a refusal: %v", err)
			}
		})
	}
}

// TestConfigValidateAuth checks that inconsistent credentials and TLS
// settings are refused before anything is dialled, all at once.
func TestConfigValidateAuth(t *testing.T) {
	cfg := runtime.Config{
		EtcdEndpoints: []string{"http://etcd:2379"},
		EtcdUsername:  "root",
		EtcdTLS:       runtime.TLSFiles{CertFile: "client.pem"},
		NATSAuth:      runtime.NATSAuth{Username: "u", Token: "secret-token"},
		NATSTLS:       runtime.TLSFiles{KeyFile: "key.pem"},
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted the configuration")
	}
	for _, w := range []string{
		"set both ETCD_AUTH_USERNAME and ETCD_AUTH_PASSWORD",
		"client certificate ETCD_AUTH_CLIENT_CERT without its key (ETCD_AUTH_CLIENT_KEY)",
		`etcd endpoint "http://etcd:2379": the etcd TLS files are set: use https://`,
		"client key NATS_TLS_KEY without its certificate (NATS_TLS_CERT)",
		"set both NATS_AUTH_USERNAME and NATS_AUTH_PASSWORD",
		"set only one authentication method",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Errorf("error %q shows the token", err)
	}
	ok := runtime.Config{
		EtcdEndpoints: []string{"https://etcd:2379"},
		EtcdUsername:  "root", EtcdPassword: "pw",
		EtcdTLS:  runtime.TLSFiles{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"},
		NATSAuth: runtime.NATSAuth{CredentialsFile: "user.creds"},
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestBadFilesFailAtOnce checks that a missing CA file, a malformed nkey
// seed or an unreadable credentials file fail New before it connects.
func TestBadFilesFailAtOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	etcdCfg := baseConfig()
	etcdCfg.EtcdEndpoints = []string{"https://127.0.0.1:1"}
	etcdCfg.EtcdTLS.CAFile = missing
	natsCfg := func(a runtime.NATSAuth) runtime.Config {
		cfg := baseConfig()
		cfg.Discovery, cfg.RequestPlane, cfg.NATSServer, cfg.NATSAuth = runtime.DiscoveryMem, runtime.PlaneNATS, "nats://127.0.0.1:1", a
		return cfg
	}
	for _, tc := range []struct {
		name string
		cfg  runtime.Config
		want string
	}{
		{"etcd CA file", etcdCfg, "runtime: etcd TLS: CA file (ETCD_AUTH_CA)"},
		{"nkey seed", natsCfg(runtime.NATSAuth{NKey: "SUNOTASEED"}), "NATS_AUTH_NKEY is neither a valid nkey seed nor a file"},
		{"nkey file", natsCfg(runtime.NATSAuth{NKey: missing}), "NATS_AUTH_NKEY seed file"},
		{"credentials file", natsCfg(runtime.NATSAuth{CredentialsFile: missing}), "NATS_AUTH_CREDENTIALS_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.ConnectTimeout = time.Minute
			start := time.Now()
			_, err := runtime.New(t.Context(), tc.cfg, runtime.Deps{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SUNOTASEED") {
				t.Errorf("error %q shows the seed", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("New took %s to fail", took)
			}
		})
	}
}
