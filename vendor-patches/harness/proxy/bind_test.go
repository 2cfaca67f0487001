package proxy

import (
	"net"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
)

func TestManagerRefusesWildcardAndNames(t *testing.T) {
	for _, addr := range []string{"0.0.0.0", "::", "", "node01", "224.0.0.1"} {
		if _, err := kvproxy.NewManager(addr, nil); err == nil {
			t.Errorf("bind address %q accepted, want refused", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1", "::1", "192.168.100.7"} {
		if _, err := kvproxy.NewManager(addr, nil); err != nil {
			t.Errorf("bind address %q refused: %v", addr, err)
		}
	}
}

// The target listener must answer on its bind address only: 127.0.0.2 is another
// local address of this host, as the management IP is on a node.
func TestTargetListenerOnlyOnBindAddress(t *testing.T) {
	p := newPair(t, nil)
	port := p.targetPort(t)
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second)
	if err != nil {
		t.Fatalf("bind address unreachable: %v", err)
	}
	c.Close()
	if backend := acceptWithin(p.backend, 2*time.Second); backend != nil {
		backend.Close()
	}
	c, err = net.DialTimeout("tcp", net.JoinHostPort("127.0.0.2", port), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("target listener reachable on 127.0.0.2:%s, want bound to 127.0.0.1 only", port)
	}
}
