package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// Keys of the certificate Secret.
const (
	KeyCert  = "tls.crt"
	KeyKey   = "tls.key"
	KeyCA    = "ca.crt"
	KeyCAKey = "ca.key"
)

// Material is what the certificate Secret holds, parsed. Unreadable parts are left nil and
// named in Problems; parsing never fails.
type Material struct {
	// CAs is ca.crt in order: the signing CA first, then older CAs kept until they expire.
	CAs []*x509.Certificate
	// CAKey is ca.key, the signing CA's key; nil when missing or unreadable.
	CAKey crypto.Signer
	// Serving is tls.crt with tls.key, Leaf set; nil when either is missing or unreadable, or
	// they do not belong together.
	Serving *tls.Certificate
	// CertPEM, KeyPEM and CAKeyPEM are tls.crt, tls.key and ca.key as stored.
	CertPEM, KeyPEM, CAKeyPEM []byte
	// Problems says what could not be read, one entry per key.
	Problems []string
}

// ParseMaterial reads the certificate Secret's data.
func ParseMaterial(data map[string][]byte) *Material {
	m := &Material{CertPEM: data[KeyCert], KeyPEM: data[KeyKey], CAKeyPEM: data[KeyCAKey]}
	if len(m.CertPEM) > 0 || len(m.KeyPEM) > 0 {
		if s, err := servingPair(m.CertPEM, m.KeyPEM); err != nil {
			m.Problems = append(m.Problems, err.Error())
		} else {
			m.Serving = s
		}
	}
	if len(m.CAKeyPEM) > 0 {
		if k, err := parseKey(m.CAKeyPEM); err != nil {
			m.Problems = append(m.Problems, KeyCAKey+": "+err.Error())
		} else {
			m.CAKey = k
		}
	}
	var problem string
	m.CAs, problem = parseBundle(data[KeyCA])
	if problem != "" {
		m.Problems = append(m.Problems, problem)
	}
	return m
}

// Data returns the Secret data that holds the material.
func (m *Material) Data() map[string][]byte {
	data := map[string][]byte{}
	if len(m.CertPEM) > 0 {
		data[KeyCert] = m.CertPEM
	}
	if len(m.KeyPEM) > 0 {
		data[KeyKey] = m.KeyPEM
	}
	if len(m.CAs) > 0 {
		data[KeyCA] = EncodeBundle(m.CAs)
	}
	if len(m.CAKeyPEM) > 0 {
		data[KeyCAKey] = m.CAKeyPEM
	}
	return data
}

// EncodeBundle returns certificates as concatenated PEM blocks.
func EncodeBundle(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// servingPair parses tls.crt and tls.key and checks that they belong together.
func servingPair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	if len(certPEM) == 0 {
		return nil, errors.New(KeyCert + " is empty")
	}
	if len(keyPEM) == 0 {
		return nil, errors.New(KeyKey + " is empty")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", KeyCert, KeyKey, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", KeyCert, err)
		}
	}
	return &pair, nil
}

// parseBundle reads the CA certificates of ca.crt; anything else in it is reported and dropped.
func parseBundle(data []byte) ([]*x509.Certificate, string) {
	var (
		cas     []*x509.Certificate
		dropped int
	)
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				dropped++
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			dropped++
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil || !c.IsCA {
			dropped++
			continue
		}
		cas = append(cas, c)
	}
	if dropped > 0 {
		return cas, fmt.Sprintf("%s: %d part(s) are not PEM CA certificates", KeyCA, dropped)
	}
	return cas, ""
}

// parseKey reads a PEM private key in PKCS#8, SEC 1 (EC) or PKCS#1 (RSA) form.
func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		switch k := k.(type) {
		case *ecdsa.PrivateKey:
			return k, nil
		case *rsa.PrivateKey:
			return k, nil
		case ed25519.PrivateKey:
			return k, nil
		}
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("PEM block %q is not a PKCS#8, EC or RSA private key", block.Type)
}

// samePublicKey reports whether a certificate belongs to a key.
func samePublicKey(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}
