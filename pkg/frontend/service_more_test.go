package frontend

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// hangEngine sends one token, then nothing until killed.
type hangEngine struct{ textEngine }

func (e *hangEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if err := emit(backend.Tokens(39)); err != nil {
		return err
	}
	<-ctx.Done()
	return context.Cause(ctx)
}

func TestStreamTimeoutKillsAHungWorker(t *testing.T) {
	s := newStack(t, Config{StreamTimeout: 300 * time.Millisecond}, pipeline.Config{})
	s.addWorker(t, "demo", &hangEngine{})
	r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}]}`)
	if r.status != http.StatusGatewayTimeout || !strings.Contains(string(r.body), "timed out") {
		t.Errorf("unary: %d %s", r.status, r.body)
	}
	r = s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"stream":true}`)
	chunks, done := sseData(t, r.body)
	if r.status != 200 || done || !strings.Contains(string(r.body), "event: error") || len(chunks) < 2 {
		t.Errorf("stream: %d done=%v %s", r.status, done, r.body)
	}
	m := string(s.get(t, "/metrics").body)
	if !strings.Contains(m, `error_type="response_timeout",model="demo",request_type="stream",status="error"} 1`) {
		t.Errorf("metrics:\n%s", grepLines(m, "requests_total"))
	}
}

func TestDirectRoutingPinsAWorker(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	a, b := helloEngine(t, 0), helloEngine(t, 0)
	s.addWorker(t, "demo", a)
	// A second worker of the same model (same card) on another runtime.
	rt := startRuntime(t, s.mem)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, rt, b, worker.Config{
			Endpoint:  runtime.EndpointID{Namespace: "dynamo", Component: "backend-demo", Name: "generate"},
			ModelPath: demoModel, ModelName: "demo",
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var health struct {
		Instances []struct {
			ID uint64 `json:"instance_id"`
		} `json:"instances"`
	}
	for deadline := time.Now().Add(5 * time.Second); len(health.Instances) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("health lists %d instances", len(health.Instances))
		}
		_ = json.Unmarshal(s.get(t, "/health").body, &health)
	}
	target := rt.InstanceID()
	for range 4 {
		r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"max_tokens":1,"nvext":{"backend_instance_id":`+itoa(target)+`}}`)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	if a.count() != 0 || b.count() != 4 {
		t.Errorf("pinned requests reached worker a %d times and b %d times, want 0 and 4", a.count(), b.count())
	}
	r := s.post(t, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"x"}],"nvext":{"backend_instance_id":12345}}`)
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "12345") {
		t.Errorf("unknown instance: %d %s", r.status, r.body)
	}
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("unknown instance: 503 with Retry-After %q, want 1", got)
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestNamespaceFilterAndAliases(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{Namespace: "prod"})
	for _, ns := range []string{"prod", "staging"} {
		rt := startRuntime(t, s.mem)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- worker.Run(ctx, rt, helloEngine(t, 0), worker.Config{
				Endpoint:  runtime.EndpointID{Namespace: ns, Component: "backend", Name: "generate"},
				ModelPath: demoModel, ModelName: "model-" + ns, Aliases: []string{"alias-" + ns},
			})
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	s.waitModels(t, func(ids []string) bool { return contains(ids, "model-prod") })
	time.Sleep(100 * time.Millisecond) // give the other namespace's card time to arrive, if it wrongly would
	if ids := s.models(t); len(ids) != 1 {
		t.Errorf("models %v, want only the prod namespace's", ids)
	}
	r := s.post(t, "/v1/chat/completions", `{"model":"alias-prod","messages":[{"role":"user","content":"x"}],"max_tokens":1}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"model":"model-prod"`) {
		t.Errorf("alias: %d %s", r.status, r.body)
	}
}

func TestShutdownLetsStreamsFinish(t *testing.T) {
	// On net/http's handler, and taken over (detach.go).
	for _, at := range []int{-1, 1} {
		t.Run(fmt.Sprintf("DetachStreamsAt=%d", at), func(t *testing.T) {
			s, br, cancel, done := streamThenShutDown(t, Config{DrainTimeout: 10 * time.Second, DetachStreamsAt: at}, 30)
			defer s.stopWorker("demo")
			cancel() // shut down with the stream in flight
			rest, err := io.ReadAll(br)
			if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
				t.Fatalf("in-flight stream after shutdown began: err %v, tail %q", err, tail(string(rest)))
			}
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

func tail(s string) string {
	if len(s) > 200 {
		return s[len(s)-200:]
	}
	return s
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := writeSelfSigned(t, certPath, keyPath)
	mem := discovery.NewMemSpace()
	models, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Runtime: startRuntime(t, mem)})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{ShutdownGrace: -1}, Deps{Models: ServeRegistry(models)})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln, certPath, keyPath) }()
	defer func() { cancel(); <-done }()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var resp *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err = client.Get("https://" + ln.Addr().String() + "/live")
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("status %d tls %v", resp.StatusCode, resp.TLS != nil)
	}
}

func writeSelfSigned(t *testing.T, certPath, keyPath string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

func (e *textEngine) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ended)
}

func TestTwoModelsOnOneEndpointKeepTheirTraffic(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	engines := map[string]*textEngine{}
	for _, name := range []string{"model-a", "model-b"} {
		eng := helloEngine(t, 0)
		engines[name] = eng
		rt := startRuntime(t, s.mem)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- worker.Run(ctx, rt, eng, worker.Config{
				Endpoint:  runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"},
				ModelPath: demoModel, ModelName: name,
			})
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	s.waitModels(t, func(ids []string) bool { return contains(ids, "model-a") && contains(ids, "model-b") })
	for range 6 {
		if r := s.post(t, "/v1/chat/completions", `{"model":"model-a","messages":[{"role":"user","content":"x"}],"max_tokens":1}`); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	if a, b := engines["model-a"].count(), engines["model-b"].count(); a != 6 || b != 0 {
		t.Errorf("model-a's requests reached its worker %d times and model-b's worker %d times, want 6 and 0", a, b)
	}
}
