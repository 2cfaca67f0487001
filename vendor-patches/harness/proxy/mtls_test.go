package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
)

// Under mTLS the target refuses a wrong-CN or foreign-CA client, and such a
// client never gets a connection to the target's QEMU socket.
func TestMTLSRefusesStrangers(t *testing.T) {
	pki := pkiOrFatal(t)
	foreign, err := kvproxy.NewForeignPKI()
	if err != nil {
		t.Fatal(err)
	}
	wrongCN, err := pki.Issue("kubevirt.io:system:client:intruder", x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	foreignClient, err := foreign.Issue(kvproxy.ClientCN, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	p := newPair(t, pki)
	addr := net.JoinHostPort("127.0.0.1", p.targetPort(t))
	base := current(t)
	for name, cfg := range map[string]*tls.Config{
		"wrong CN":   pki.ClientConfigWith(wrongCN),
		"foreign CA": foreign.ClientConfigWith(foreignClient),
	} {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
		if err == nil {
			// TLS 1.3: the client finishes first and learns of the refusal on read.
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		if err == nil {
			t.Errorf("%s: connection accepted", name)
		}
		if b := acceptWithin(p.backend, 2*time.Second); b != nil {
			b.Close()
			t.Errorf("%s: refused client still got a connection to the target's QEMU socket", name)
		}
	}
	expectBack(t, "after refused clients", base)
	// The genuine client still gets through.
	c, err := net.Dial("unix", p.sourceSock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	b := acceptWithin(p.backend, 5*time.Second)
	if b == nil {
		t.Fatal("genuine client refused")
	}
	b.Close()
}
