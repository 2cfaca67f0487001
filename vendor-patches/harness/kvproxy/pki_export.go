package kvproxy

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
)

type pkiWire struct {
	CA, CAKey, Server, ServerKey, Client, ClientKey []byte
}

// Export serialises the PKI (keys included: test material only) for a node
// process in another namespace.
func (p *PKI) Export() ([]byte, error) {
	w := pkiWire{CA: p.ca.Raw, Server: p.server.Certificate[0], Client: p.client.Certificate[0]}
	var err error
	if w.CAKey, err = x509.MarshalECPrivateKey(p.caKey); err != nil {
		return nil, err
	}
	if w.ServerKey, err = x509.MarshalECPrivateKey(p.server.PrivateKey.(*ecdsa.PrivateKey)); err != nil {
		return nil, err
	}
	if w.ClientKey, err = x509.MarshalECPrivateKey(p.client.PrivateKey.(*ecdsa.PrivateKey)); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// ImportPKI reverses Export.
func ImportPKI(b []byte) (*PKI, error) {
	var w pkiWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	ca, err := x509.ParseCertificate(w.CA)
	if err != nil {
		return nil, err
	}
	p := &PKI{ca: ca, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	if p.caKey, err = x509.ParseECPrivateKey(w.CAKey); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		der, key []byte
		dst      *tls.Certificate
	}{{w.Server, w.ServerKey, &p.server}, {w.Client, w.ClientKey, &p.client}} {
		k, err := x509.ParseECPrivateKey(c.key)
		if err != nil {
			return nil, err
		}
		*c.dst = tls.Certificate{Certificate: [][]byte{c.der}, PrivateKey: k}
	}
	return p, nil
}
