// Package testcert makes self-signed TLS certificates for tests: one
// generator for every test that needs a turns: listener, so they all mean
// the same thing by "a certificate for 127.0.0.1".
package testcert

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

// Cert is a self-signed server certificate for 127.0.0.1 and ::1, valid for
// an hour either side of now.
type Cert struct {
	DER []byte
	Key *ecdsa.PrivateKey
}

// New makes a certificate with the given serial number (tests that swap
// certificates tell them apart by it).
func New(tb testing.TB, serial int64) Cert {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "turnd test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	return Cert{DER: der, Key: key}
}

// ServerConfig is a TLS server configuration presenting the certificate.
func (c Cert) ServerConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{c.DER}, PrivateKey: c.Key}},
		MinVersion:   tls.VersionTLS12,
	}
}

// ClientConfig is a TLS client configuration that trusts only the certificate.
func (c Cert) ClientConfig() *tls.Config {
	pool := x509.NewCertPool()
	leaf, err := x509.ParseCertificate(c.DER)
	if err == nil {
		pool.AddCert(leaf)
	}
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// WriteFiles writes the certificate and key as PEM into dir and returns
// their paths (cert.pem, key.pem), as turnd's tls.cert_file/key_file want.
func (c Cert) WriteFiles(tb testing.TB, dir string) (certFile, keyFile string) {
	tb.Helper()
	keyDER, err := x509.MarshalECPrivateKey(c.Key)
	if err != nil {
		tb.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{
		certFile: {Type: "CERTIFICATE", Bytes: c.DER},
		keyFile:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return certFile, keyFile
}
