package kvproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// Common names virt-handler's migration mTLS asserts (kubevirt.io:system:<kind>:<type>).
const (
	ServerCN = "kubevirt.io:system:node:virt-handler"
	ClientCN = "kubevirt.io:system:client:virt-handler"
)

// PKI is a test CA with one server and one client certificate, and TLS configs
// that check what virt-handler's (pkg/util/tls) check.
type PKI struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	pool   *x509.CertPool
	server tls.Certificate
	client tls.Certificate
}

// NewPKI creates a CA and the virt-handler server and client certificates.
func NewPKI() (*PKI, error) {
	ca, caKey, err := selfSigned("migranet test CA")
	if err != nil {
		return nil, err
	}
	p := &PKI{ca: ca, caKey: caKey, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	if p.server, err = p.Issue(ServerCN, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if p.client, err = p.Issue(ClientCN, x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	return p, nil
}

// NewForeignPKI is a second, unrelated CA issuing certificates with the right
// common names: the target must refuse its clients.
func NewForeignPKI() (*PKI, error) { return NewPKI() }

// Issue signs a leaf certificate for cn with the given usage.
func (p *PKI) Issue(cn string, usage x509.ExtKeyUsage) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("issue %s: %w", cn, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// ServerConfig mirrors virt-handler's migration server config (target side,
// pkg/util/tls SetupTLSForServer at v1.9.0): a client certificate is required and
// verified against the CA (RequireAndVerifyClientCert, ClientCAs), then checked
// again for client auth and virt-handler's client common name.
func (p *PKI) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{p.server},
		ClientCAs:    p.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return p.verifyPeer(raw, x509.ExtKeyUsageClientAuth, ClientCN)
		},
	}
}

// ClientConfig mirrors virt-handler's migration client config (source side).
func (p *PKI) ClientConfig() *tls.Config {
	return p.ClientConfigWith(p.client)
}

// ClientConfigWith is the client config presenting cert instead of the good one.
func (p *PKI) ClientConfigWith(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // no IP SANs, as upstream: the callback verifies
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return p.verifyPeer(raw, x509.ExtKeyUsageServerAuth, ServerCN)
		},
	}
}

func (p *PKI) verifyPeer(raw [][]byte, usage x509.ExtKeyUsage, cn string) error {
	if len(raw) == 0 {
		return fmt.Errorf("no peer certificate")
	}
	c, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return err
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: p.pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("could not verify peer certificate: %w", err)
	}
	if c.Subject.CommonName != cn {
		return fmt.Errorf("common name is invalid, got %s", c.Subject.CommonName)
	}
	return nil
}

func selfSigned(cn string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}
