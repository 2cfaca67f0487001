package kvproxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// PKIFromPEM builds the PKI virt-handler's migration TLS configs are made of from
// PEM files as virt-handler reads them: the KubeVirt CA bundle (the kubevirt-ca
// ConfigMap's ca-bundle), the server certificate and key and the client
// certificate and key (its two certificate secrets). The CA's key is not needed:
// the result cannot Issue.
func PKIFromPEM(caBundle, serverCert, serverKey, clientCert, clientKey []byte) (*PKI, error) {
	p := &PKI{pool: x509.NewCertPool()}
	for rest := caBundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w", err)
		}
		if p.ca == nil {
			p.ca = c
		}
		p.pool.AddCert(c)
	}
	if p.ca == nil {
		return nil, fmt.Errorf("CA bundle: no certificate")
	}
	var err error
	if p.server, err = tls.X509KeyPair(serverCert, serverKey); err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	if p.client, err = tls.X509KeyPair(clientCert, clientKey); err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return p, nil
}

// ServerCertificate is the server certificate (virt-handler serves its metrics
// endpoint with it too).
func (p *PKI) ServerCertificate() tls.Certificate { return p.server }
