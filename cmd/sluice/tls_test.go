package main

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
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit"
)

// testCA is a self-signed CA that signs a certificate for 127.0.0.1.
type testCA struct {
	caFile, certFile, keyFile string
}

func newTestCA(t *testing.T, dir, name string) testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := testCA{
		caFile:   filepath.Join(dir, name+"-ca.pem"),
		certFile: filepath.Join(dir, name+"-server.pem"),
		keyFile:  filepath.Join(dir, name+"-server-key.pem"),
	}
	for path, block := range map[string]*pem.Block{
		c.caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		c.certFile: {Type: "CERTIFICATE", Bytes: der},
		c.keyFile:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// The worker reaches a NATS server whose certificate a self-signed CA
// signed when source.jetstream.tls.ca_file names that CA, and is refused
// without it or with another CA.
func TestRunTLSWithCAFile(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "sluice-test")
	other := newTestCA(t, dir, "other")
	pair, err := tls.LoadX509KeyPair(ca.certFile, ca.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, JetStream: true, StoreDir: t.TempDir(),
		TLS: true, TLSTimeout: 5,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	api := newAPILog()
	target := httptest.NewServer(api)
	defer target.Close()

	cfg := e2eConfig(t, "nats://"+ns.Addr().String(), target.URL)
	cfg.Source.JetStream.ConnectTimeout = 3 * time.Second
	for name, caFile := range map[string]string{"no CA file": "", "another CA": other.caFile} {
		bad := cfg
		bad.Source.JetStream.TLS.CAFile = caFile
		bad = mustValid(t, bad)
		err := run.Worker(t.Context(), bad, run.Options{Registry: prometheus.NewRegistry(), Log: nil})
		if err == nil {
			t.Fatalf("%s: the worker connected", name)
		}
		if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: error does not say the certificate is not trusted: %v", name, err)
		}
	}

	cfg.Source.JetStream.TLS.CAFile = ca.caFile
	cfg = mustValid(t, cfg)
	q := client(t, cfg)
	enqueueJob(t, q, "over-tls", map[string]any{"headers": map[string]string{"X-Job": "over-tls"}})
	r := startRun(t, cfg, nil)
	testkit.Eventually(t, "the job over TLS", func() bool { return drained(t, q) })
	r.stop(t)
	if api.count("over-tls") != 1 {
		t.Fatalf("target traffic: %v", api.hits)
	}
}
