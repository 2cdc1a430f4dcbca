// Package connfail tells a control-plane connection failure that retrying
// cannot cure (the server refused the credentials, or the TLS handshake
// failed) from one that it can (the server is not up yet). The runtime
// retries the second kind at start-up, for start-up ordering, and reports
// the first kind at once.
//
// Classify reads an error from a client library (nats.go, the etcd gRPC
// client). CheckTLS dials a server and shakes hands itself, for clients
// such as gRPC that report a certificate problem only as a failure to
// connect. Both return an *Error, which matches ErrAuthFailed or ErrTLS
// under errors.Is. The functions are safe for concurrent use.
package connfail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"time"
)

// Class sentinels of a failure that retrying cannot cure.
var (
	// ErrAuthFailed: the server refused the user, password, token or key.
	ErrAuthFailed = errors.New("authentication failed")
	// ErrTLS: the TLS handshake failed (the client does not trust the
	// server's certificate, the server refused the client's, or one side
	// does not speak TLS).
	ErrTLS = errors.New("TLS")
)

// Problem says which setting a permanent failure points at.
type Problem int

// The problems Classify and CheckTLS recognize.
const (
	// BadCredentials: user and password, token, nkey or credentials file.
	BadCredentials Problem = iota + 1
	// UntrustedServer: the server's certificate is not signed by a trusted
	// CA, or has expired: the client's CA setting.
	UntrustedServer
	// WrongHost: the server's certificate is not valid for the host the
	// client dialled: the endpoint URL (or the server's certificate).
	WrongHost
	// RefusedByServer: the server ended the handshake, most often because
	// it requires a client certificate that is missing or not trusted.
	RefusedByServer
	// NotTLS: one side speaks TLS and the other does not.
	NotTLS
)

// Error is a connection failure that retrying cannot cure. It matches
// ErrAuthFailed (BadCredentials) or ErrTLS (the others) and unwraps to the
// library's error.
type Error struct {
	Problem Problem
	// Reason is a short description, e.g. "server certificate not trusted".
	Reason string
	// Err is the error the library or the handshake returned.
	Err error
}

// Error renders "<class>: <reason>: <library error>".
func (e *Error) Error() string {
	s := e.class().Error()
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the class sentinel and the library's error.
func (e *Error) Unwrap() []error { return []error{e.class(), e.Err} }

func (e *Error) class() error {
	if e.Problem == BadCredentials {
		return ErrAuthFailed
	}
	return ErrTLS
}

// Classify returns an *Error if err reports a TLS failure that retrying
// cannot cure, and nil otherwise. It recognizes the crypto/tls and
// crypto/x509 error types anywhere in err's chain and, for clients that
// flatten errors into text (gRPC's "transport: authentication handshake
// failed: ..."), their messages. Credential errors are protocol specific:
// callers recognize them and build an Error with BadCredentials.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var (
		verify  *tls.CertificateVerificationError
		host    x509.HostnameError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		op      *net.OpError
	)
	switch {
	case errors.As(err, &host):
		return &Error{Problem: WrongHost, Reason: "server certificate not valid for this host", Err: err}
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &invalid):
		return &Error{Problem: UntrustedServer, Reason: "server certificate not trusted", Err: err}
	case errors.As(err, &record):
		return &Error{Problem: NotTLS, Reason: "the server does not speak TLS", Err: err}
	case errors.As(err, &op) && op.Op == "remote error":
		return &Error{Problem: RefusedByServer, Reason: "the server refused the handshake", Err: err}
	}
	// Text only: gRPC reports connection errors as a status message.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "x509: certificate is valid for"),
		strings.Contains(msg, "x509: cannot validate certificate"):
		return &Error{Problem: WrongHost, Reason: "server certificate not valid for this host", Err: err}
	case strings.Contains(msg, "x509:"):
		return &Error{Problem: UntrustedServer, Reason: "server certificate not trusted", Err: err}
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return &Error{Problem: NotTLS, Reason: "the server does not speak TLS", Err: err}
	case strings.Contains(msg, "remote error: tls:"):
		return &Error{Problem: RefusedByServer, Reason: "the server refused the handshake", Err: err}
	}
	return nil
}

// CheckTLS dials addr ("host:port") over TCP and shakes hands with cfg,
// whose ServerName, if empty, becomes the host of addr. It then writes
// hello (if any) and waits for the server's first bytes, within timeout:
// under TLS 1.3 a server that refuses the client's certificate says so only
// after the client has finished its side of the handshake, and a server
// that accepts it may send nothing until the client speaks first (hello;
// for gRPC the HTTP/2 client preface).
//
// It returns an *Error when the handshake failed for a reason retrying
// cannot cure, and nil otherwise, in particular when addr cannot be reached
// (the caller retries) or the server answered.
func CheckTLS(ctx context.Context, addr string, cfg *tls.Config, hello []byte, timeout time.Duration) *Error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Classify(err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if len(hello) > 0 {
		if _, err := conn.Write(hello); err != nil {
			return Classify(err)
		}
	}
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil {
		return Classify(err)
	}
	return nil
}
