package rules

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// TLSFiles names the client certificate, its key and an optional CA bundle
// for an mTLS broker connection (AWS IoT Core). Each value is either PEM
// text (as ECS injects a secret into an environment variable) or the path
// of a PEM file.
type TLSFiles struct {
	Cert, Key, CA string
}

// Config returns the tls.Config for f, or nil when f is empty. An error
// names which of the three is wrong.
func (f TLSFiles) Config() (*tls.Config, error) {
	if f.Cert == "" && f.Key == "" && f.CA == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("mqtt tls: client certificate and key go together (got cert=%t, key=%t)", f.Cert != "", f.Key != "")
	}
	if f.Cert != "" {
		certPEM, err := pemOrFile("client certificate", f.Cert)
		if err != nil {
			return nil, err
		}
		keyPEM, err := pemOrFile("client key", f.Key)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("mqtt tls: client certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if f.CA != "" {
		caPEM, err := pemOrFile("CA bundle", f.CA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("mqtt tls: CA bundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func pemOrFile(what, v string) ([]byte, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "-----BEGIN") {
		return []byte(v), nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		// Not PEM, so a path, or a secret without its armour: the error
		// never repeats the value (a key must not reach a log).
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("mqtt tls: %s: not PEM text (no -----BEGIN line) and not a readable file (%d bytes given, not shown): %w", what, len(v), err)
	}
	return b, nil
}
