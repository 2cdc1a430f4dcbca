package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is an ephemeral certificate authority for one test. Its key lives in
// memory; its certificate, and every certificate it issues, is written as
// PEM files in a temporary directory that is removed when the test ends.
type CA struct {
	// File is the CA certificate (PEM): what a client or a server that
	// trusts this CA is given.
	File string

	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	n    int64
}

// Certs are the PEM files of one issued certificate.
type Certs struct {
	// CertFile and KeyFile are the certificate and its private key.
	CertFile, KeyFile string
	// CAFile is the certificate of the CA that issued it.
	CAFile string
}

// NewCA makes a CA whose files are removed when the test ends.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testenv CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testenv: CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testenv: CA certificate: %v", err)
	}
	ca := &CA{dir: t.TempDir(), cert: cert, key: key, n: 1}
	ca.File = ca.write(t, "ca.pem", "CERTIFICATE", der)
	return ca
}

// Issue issues a certificate named name, valid for both server and client
// authentication, for hosts (IP addresses or DNS names; none for a client
// certificate).
func (ca *CA) Issue(t testing.TB, name string, hosts ...string) Certs {
	t.Helper()
	key := newKey(t)
	ca.n++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.n),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Servers that dial themselves (etcd's gateway) present their
		// server certificate as a client certificate.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("testenv: issue %s: %v", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testenv: issue %s: %v", name, err)
	}
	return Certs{
		CertFile: ca.write(t, name+".pem", "CERTIFICATE", der),
		KeyFile:  ca.write(t, name+"-key.pem", "PRIVATE KEY", keyDER),
		CAFile:   ca.File,
	}
}

// Server issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server(t testing.TB) Certs {
	t.Helper()
	return ca.Issue(t, "server", "127.0.0.1", "localhost")
}

// ClientTLS returns a TLS client configuration that trusts the CA in
// caFile and, if certs is not nil, presents its certificate.
func ClientTLS(t testing.TB, caFile string, certs *Certs) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cfg := &tls.Config{RootCAs: x509.NewCertPool()}
	if !cfg.RootCAs.AppendCertsFromPEM(b) {
		t.Fatalf("testenv: no certificate in %s", caFile)
	}
	if certs != nil {
		cert, err := tls.LoadX509KeyPair(certs.CertFile, certs.KeyFile)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

func (ca *CA) write(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(ca.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testenv: key: %v", err)
	}
	return key
}
