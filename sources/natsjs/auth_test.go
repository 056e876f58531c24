package natsjs_test

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
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// certPair is a certificate signed by ca (self-signed when ca is nil),
// written as PEM files in dir.
type certPair struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certFile string
	keyFile  string
}

func newCert(t *testing.T, dir, name string, ca *certPair, isCA bool, usage x509.ExtKeyUsage) *certPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  isCA,
		BasicConstraintsValid: true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	if isCA {
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := &certPair{cert: cert, key: key, certFile: filepath.Join(dir, name+".pem"), keyFile: filepath.Join(dir, name+"-key.pem")}
	if err := os.WriteFile(p.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSClientCert connects to a server that requires a client
// certificate, verifying the server with a CA file.
func TestTLSClientCert(t *testing.T) {
	dir := t.TempDir()
	ca := newCert(t, dir, "ca", nil, true, 0)
	srvCert := newCert(t, dir, "server", ca, false, x509.ExtKeyUsageServerAuth)
	client := newCert(t, dir, "client", ca, false, x509.ExtKeyUsageClientAuth)

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	pair, err := tls.LoadX509KeyPair(srvCert.certFile, srvCert.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ns := runServer(t, &server.Options{
		Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		JetStream: true, StoreDir: t.TempDir(),
		TLS: true, TLSVerify: true, TLSTimeout: 5,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{pair},
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		},
	})
	cfg := uniqueConfig(ns.ClientURL())

	// Without a client certificate the server refuses the connection.
	cfg.TLS = natsjs.TLS{CAFile: ca.certFile}
	if _, err := natsjs.Open(t.Context(), cfg, nil); err == nil {
		t.Fatal("connected without a client certificate")
	}

	cfg.TLS = natsjs.TLS{CAFile: ca.certFile, CertFile: client.certFile, KeyFile: client.keyFile}
	s := open(t, cfg)
	defer s.Close()
	if err := s.Publish(t.Context(), sources.Outgoing{ID: "tls-1", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Receive(t.Context(), 1)
	if err != nil || len(msgs) != 1 || msgs[0].ID() != "tls-1" {
		t.Fatalf("Receive over TLS: %d messages, %v", len(msgs), err)
	}
	if err := msgs[0].Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestNKeyAndUserAuth connects with an nkey seed file and with a user and
// password.
func TestNKeyAndUserAuth(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := runServer(t, &server.Options{
		Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		JetStream: true, StoreDir: t.TempDir(),
		Nkeys: []*server.NkeyUser{{Nkey: pub}},
		Users: []*server.User{{Username: "sluice", Password: "pa55word"}},
	})
	for name, auth := range map[string]natsjs.Auth{
		"nkey": {NKeySeedFile: seedFile},
		"user": {User: "sluice", Password: "pa55word"},
	} {
		cfg := uniqueConfig(ns.ClientURL())
		cfg.Auth = auth
		s, err := natsjs.Open(t.Context(), cfg, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := s.Publish(t.Context(), sources.Outgoing{ID: name}); err != nil {
			t.Errorf("%s: publish: %v", name, err)
		}
		_ = s.Close()
	}
	cfg := uniqueConfig(ns.ClientURL())
	cfg.Auth = natsjs.Auth{User: "sluice", Password: "wrong-pa55"}
	if _, err := natsjs.Open(t.Context(), cfg, nil); err == nil {
		t.Error("connected with a wrong password")
	} else if strings.Contains(err.Error(), "wrong-pa55") {
		t.Errorf("error shows the password: %v", err)
	}
}
