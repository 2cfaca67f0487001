package proxy

import (
	"github.com/migranet/migranet/vendor-patches/harness/poll"
	"net"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
)

// Under mTLS the target proxy itself refuses every stranger (kvproxy.Strangers:
// no client certificate, a foreign CA's certificate from a client that trusts
// the real CA, a wrong CN, a dropped handshake): its log records one refusal per
// stranger, the TLS strangers see the server's alert, no stranger gets a
// connection to the target's QEMU socket, and nothing stays open.
func TestMTLSRefusesStrangers(t *testing.T) {
	noGC(t)
	pki := pkiOrFatal(t)
	p := newPair(t, pki)
	addr := net.JoinHostPort("127.0.0.1", p.targetPort(t))
	base := current(t)
	for _, s := range kvproxy.Strangers {
		before := proxyLog.Refusals(p.key)
		refused, err := pki.Probe(addr, s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
		}
		var n int
		poll.Until(5*time.Second, func() bool { n = proxyLog.Refusals(p.key); return n > before })
		if n != before+1 {
			t.Errorf("%s (client saw %q): the target proxy logged %d refusals, want 1", s, refused, n-before)
		}
		if b := acceptWithin(p.backend, 500*time.Millisecond); b != nil {
			b.Close()
			t.Errorf("%s: refused client still got a connection to the target's QEMU socket", s)
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
