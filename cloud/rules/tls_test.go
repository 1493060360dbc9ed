package rules

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func selfSigned(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ingest"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

func TestTLSFilesFromPEMAndPaths(t *testing.T) {
	cert, key := selfSigned(t)
	if cfg, err := (TLSFiles{}).Config(); err != nil || cfg != nil {
		t.Fatalf("empty TLSFiles: cfg=%v err=%v; want nil, nil", cfg, err)
	}
	cfg, err := TLSFiles{Cert: cert, Key: key, CA: cert}.Config()
	if err != nil {
		t.Fatalf("PEM values: %v", err)
	}
	if len(cfg.Certificates) != 1 || cfg.RootCAs == nil {
		t.Fatalf("PEM values: %d certificates, RootCAs %v; want 1 and a pool", len(cfg.Certificates), cfg.RootCAs)
	}
	dir := t.TempDir()
	cp, kp := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(cp, []byte(cert), 0o600)
	os.WriteFile(kp, []byte(key), 0o600)
	if _, err := (TLSFiles{Cert: cp, Key: kp}).Config(); err != nil {
		t.Fatalf("file paths: %v", err)
	}
}

func TestTLSFilesErrorsNameTheInput(t *testing.T) {
	cert, key := selfSigned(t)
	for _, c := range []struct {
		f    TLSFiles
		want string
	}{
		{TLSFiles{Cert: cert}, "go together"},
		{TLSFiles{Cert: "/nonexistent/c.pem", Key: key}, "client certificate"},
		{TLSFiles{Cert: cert, Key: cert}, "client certificate and key"},
		{TLSFiles{CA: "-----BEGIN nothing"}, "CA bundle"},
	} {
		_, err := c.f.Config()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Config(%+v) error = %v; want one mentioning %q", c.f, err, c.want)
		}
	}
}
