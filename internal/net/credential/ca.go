package credential

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// caLifetime is how long the per-run CA and its leaves are valid: longer
// than any run (an MCP server's session lasts a day at most), short
// enough that a copy of the certificate is worth nothing soon.
const caLifetime = 48 * time.Hour

// CA is a run's certificate authority: an ECDSA P-256 key that lives in
// this process's memory only, and a certificate name-constrained to the
// credentials' domains (and no IP address), so that even a leaked key
// signs nothing a client would accept for another host. It signs one
// leaf per host, cached. It is safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	leafKey *ecdsa.PrivateKey
	domains []string

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewCA makes a run's CA for hosts: names, or "*.domain" patterns (the
// domain and every name below it are permitted).
func NewCA(hosts []string) (*CA, error) {
	var domains []string
	for _, h := range hosts {
		d := strings.TrimPrefix(strings.ToLower(h), "*.")
		if d == "" || strings.Contains(d, "*") || net.ParseIP(d) != nil {
			return nil, fmt.Errorf("credential: %q is not a host name a CA can be limited to", h)
		}
		if !slices.Contains(domains, d) {
			domains = append(domains, d)
		}
	}
	if len(domains) == 0 {
		return nil, errors.New("credential: a CA needs at least one host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("credential: making the CA's key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("credential: making the leaves' key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	_, all4, _ := net.ParseCIDR("0.0.0.0/0")
	_, all6, _ := net.ParseCIDR("::/0")
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// A name of its own: a client that picks an issuer by name alone
		// (Node) must not find another run's CA (a cordon inside cordon).
		Subject:                     pkix.Name{CommonName: fmt.Sprintf("cordon per-run credential CA %x", serial.Bytes()[:8]), Organization: []string{"cordon"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(caLifetime),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		ExtKeyUsage:                 []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         domains,
		ExcludedIPRanges:            []*net.IPNet{all4, all6},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("credential: making the CA's certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("credential: reading the CA's certificate: %w", err)
	}
	return &CA{
		cert:    cert,
		key:     key,
		leafKey: leafKey,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		domains: domains,
		leaves:  map[string]*tls.Certificate{},
	}, nil
}

// CertPEM is the CA's certificate, PEM-encoded: what the sandbox trusts.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// Certificate is the CA's parsed certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Leaf returns the certificate the proxy presents for host (made once,
// then cached): host alone in its names, signed by the CA. A host
// outside the CA's domains is refused.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	if !ca.covers(host) {
		return nil, fmt.Errorf("credential: %s is not a host of the run's credentials", host)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("credential: signing the certificate of %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("credential: reading the certificate of %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: ca.leafKey, Leaf: leaf}
	ca.leaves[host] = c
	return c, nil
}

// covers says whether host is one of the CA's domains or below one.
func (ca *CA) covers(host string) bool {
	for _, d := range ca.domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// newSerial is a random 128-bit certificate serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("credential: making a serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
