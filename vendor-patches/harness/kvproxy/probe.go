package kvproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// Stranger is a client the target proxy must refuse under mTLS.
type Stranger string

// The strangers: each trusts the real CA (so it never rejects the server by
// itself) and differs from virt-handler's client in one thing only.
const (
	NoClientCert   Stranger = "no client certificate"
	ForeignCA      Stranger = "certificate from a foreign CA"
	WrongCN        Stranger = "wrong identity (CN)"
	DropsHandshake Stranger = "drops the handshake"
)

// Strangers lists them in the order the suites try them.
var Strangers = []Stranger{NoClientCert, ForeignCA, WrongCN, DropsHandshake}

// probeWait bounds one probe's dial, handshake and read.
const probeWait = 5 * time.Second

// Probe connects to a target proxy at addr as stranger s and returns how the
// server turned it away: a TLS alert the server sent ("remote error: ..."). A
// probe that completes and then sees no refusal (its read times out or returns
// data) is an error: the server let it in. DropsHandshake opens the TCP
// connection and closes it without a ClientHello; only the server's side can
// tell what it did with it, so it returns "dropped".
func (p *PKI) Probe(addr string, s Stranger) (string, error) {
	d := &net.Dialer{Timeout: probeWait}
	if s == DropsHandshake {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return "", err
		}
		return "dropped", c.Close()
	}
	var cfg *tls.Config
	switch s {
	case NoClientCert:
		cfg = p.ClientConfigWith(tls.Certificate{})
		cfg.Certificates = nil
	case ForeignCA:
		foreign, err := NewForeignPKI()
		if err != nil {
			return "", err
		}
		cert, err := foreign.Issue(ClientCN, x509.ExtKeyUsageClientAuth)
		if err != nil {
			return "", err
		}
		cfg = p.ClientConfigWith(cert) // verifies the server against the real CA
	case WrongCN:
		cert, err := p.Issue("kubevirt.io:system:client:intruder", x509.ExtKeyUsageClientAuth)
		if err != nil {
			return "", err
		}
		cfg = p.ClientConfigWith(cert)
	default:
		return "", fmt.Errorf("unknown stranger %q", s)
	}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err == nil {
		// TLS 1.3: the client's handshake ends before the server has checked the
		// client's certificate; the refusal arrives as an alert on the first read.
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(probeWait))
		_, err = c.Read(make([]byte, 1))
		if err == nil {
			return "", errors.New("server let the client in: it read data")
		}
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return err.Error(), nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "", fmt.Errorf("server let the client in: no refusal within %s (%v)", probeWait, err)
	}
	return "", fmt.Errorf("not refused by a server alert: %w", err)
}
