package forward

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial int64

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert: cert, key: key, pool: pool}
}

func (c *ca) issue(t *testing.T, name string, server bool) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestMutualTLS runs a broker that requires client certificates from its
// CA: the gateway with a certificate from that CA connects and delivers;
// one from another CA, one without a certificate, and one that does not
// trust the broker's CA are refused, each with an error saying why.
func TestMutualTLS(t *testing.T) {
	good, rogue := newCA(t, "bowline test ca"), newCA(t, "rogue ca")
	b := startBroker(t, &tls.Config{
		Certificates: []tls.Certificate{good.issue(t, "broker", true)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    good.pool,
		MinVersion:   tls.VersionTLS12,
	})

	t.Run("valid client certificate", func(t *testing.T) {
		o := openOutbox(t)
		if err := o.Append(t.Context(), []outbox.Entry{event("bowl-1", "e1")}, nil); err != nil {
			t.Fatal(err)
		}
		runForwarder(t, Config{Broker: b.URL, ClientID: "gw-good", TLS: &tls.Config{RootCAs: good.pool, Certificates: []tls.Certificate{good.issue(t, "gw-good", false)}}}, o)
		b.waitFor(t, 30*time.Second, "the event over mTLS", func(m []mqttbroker.Message) bool {
			for _, x := range m {
				if x.ClientID == "gw-good" && strings.HasSuffix(x.Topic, "/events") {
					return true
				}
			}
			return false
		})
	})

	refused := []struct {
		name string
		tls  *tls.Config
		want string
	}{
		{"client certificate from another CA", &tls.Config{RootCAs: good.pool, Certificates: []tls.Certificate{rogue.issue(t, "gw-rogue", false)}}, "certificate"},
		{"no client certificate", &tls.Config{RootCAs: good.pool}, "certificate"},
		{"broker not trusted", &tls.Config{RootCAs: rogue.pool, Certificates: []tls.Certificate{good.issue(t, "gw-x", false)}}, "certificate signed by unknown authority"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			o := openOutbox(t)
			if err := o.Append(t.Context(), []outbox.Entry{event("bowl-1", "e1")}, nil); err != nil {
				t.Fatal(err)
			}
			f, _ := runForwarder(t, Config{Broker: b.URL, ClientID: "gw-refused", BackoffMin: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond, TLS: tt.tls}, o)
			testkit.WaitFor(t, "a connection error", 30*time.Second, func() bool { return f.Status().LastError != "" })
			st := f.Status()
			if st.Connected || st.Connects != 0 || !strings.Contains(st.LastError, tt.want) || !strings.Contains(st.LastError, "connect") {
				t.Fatalf("status = %+v; want never connected and an error about %q", st, tt.want)
			}
			t.Logf("refused with: %s", st.LastError)
			for _, id := range b.rec.Connects() {
				if id == "gw-refused" {
					t.Fatalf("broker accepted a session from gw-refused")
				}
			}
		})
	}
}
