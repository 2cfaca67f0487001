package proxy

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
)

func pkiOrFatal(t *testing.T) *kvproxy.PKI {
	t.Helper()
	pki, err := kvproxy.NewPKI()
	if err != nil {
		t.Fatal(err)
	}
	return pki
}

// Channels opened one after another must reach the backend in that order (QEMU
// multifd identifies its main channel by arrival order).
func TestConnectionsArriveInOpenOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		pki  *kvproxy.PKI
	}{{"plain", nil}, {"mTLS", pkiOrFatal(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, tc.pki)
			const rounds, channels = 5, 12
			for r := 0; r < rounds; r++ {
				var clients []net.Conn
				for i := 0; i < channels; i++ {
					c, err := net.Dial("unix", p.sourceSock)
					if err != nil {
						t.Fatal(err)
					}
					clients = append(clients, c)
					var hdr [4]byte
					binary.BigEndian.PutUint32(hdr[:], uint32(i))
					if _, err := c.Write(hdr[:]); err != nil {
						t.Fatal(err)
					}
				}
				var got []uint32
				for i := 0; i < channels; i++ {
					b := acceptWithin(p.backend, 5*time.Second)
					if b == nil {
						t.Fatalf("round %d: channel %d never arrived", r, i)
					}
					var hdr [4]byte
					b.SetReadDeadline(time.Now().Add(5 * time.Second))
					if _, err := io.ReadFull(b, hdr[:]); err != nil {
						t.Fatal(err)
					}
					got = append(got, binary.BigEndian.Uint32(hdr[:]))
					b.Close()
				}
				for i, v := range got {
					if v != uint32(i) {
						t.Fatalf("round %d: arrival order %v, want 0..%d", r, got, channels-1)
					}
				}
				for _, c := range clients {
					c.Close()
				}
			}
		})
	}
}

// A half-close travels through both proxies, the reply comes back, and nothing
// stays open afterwards.
func TestHalfCloseAndNoLeak(t *testing.T) {
	for _, tc := range []struct {
		name string
		pki  *kvproxy.PKI
	}{{"plain", nil}, {"mTLS", pkiOrFatal(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			noGC(t)
			p := newPair(t, tc.pki)
			base := current(t)
			payload := make([]byte, 8<<20)
			rand.Read(payload)
			c, err := net.Dial("unix", p.sourceSock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			done := make(chan error, 1)
			go func() {
				_, err := c.Write(payload)
				if err == nil {
					err = c.(*net.UnixConn).CloseWrite()
				}
				done <- err
			}()
			b := acceptWithin(p.backend, 5*time.Second)
			if b == nil {
				t.Fatal("no backend connection")
			}
			b.SetDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(b)
			if err != nil {
				t.Fatalf("backend never saw EOF (half-close not propagated): %v after %d bytes", err, len(got))
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("backend got %d bytes, want the %d sent", len(got), len(payload))
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, err := b.Write([]byte("bye")); err != nil {
				t.Fatalf("the backend cannot answer after the client's half-close (the proxy closed the connection instead of passing the EOF on): %v", err)
			}
			b.Close()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			reply, err := io.ReadAll(c)
			if err != nil || string(reply) != "bye" {
				t.Fatalf("reply %q, %v; want \"bye\" then EOF", reply, err)
			}
			c.Close()
			expectBack(t, "after a completed stream", base)
			assertBytes(t, p.key, int64(len(payload)), int64(len("bye")))
			p.stop()
			if got, err := kvproxy.ProxyBytes(p.key); err != nil || len(got) != 0 {
				t.Errorf("metric series of %s after stop: %v (%v), want none", p.key, got, err)
			}
		})
	}
}

// A peer dying mid-stream must not leave the other leg, an fd or a goroutine.
func TestPeerKilledMidStreamNoLeak(t *testing.T) {
	for _, tc := range []struct {
		name string
		pki  *kvproxy.PKI
	}{{"plain", nil}, {"mTLS", pkiOrFatal(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			noGC(t)
			p := newPair(t, tc.pki)
			base := current(t)
			c, err := net.Dial("unix", p.sourceSock)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(make([]byte, 1<<20)); err != nil {
				t.Fatal(err)
			}
			b := acceptWithin(p.backend, 5*time.Second)
			if b == nil {
				t.Fatal("no backend connection")
			}
			if _, err := io.ReadFull(b, make([]byte, 1<<20)); err != nil {
				t.Fatal(err)
			}
			c.Close() // the source QEMU is gone
			b.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.Copy(io.Discard, b); err != nil {
				t.Errorf("target side not told the source died: %v", err)
			}
			b.Close()
			expectBack(t, "after the source died mid-stream", base)
		})
	}
}

// assertBytes checks key's byte metrics exactly, both proxies, both directions.
func assertBytes(t *testing.T, key string, toTarget, fromTarget int64) {
	t.Helper()
	got, err := kvproxy.ProxyBytes(key)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]int64{
		"source/to_target/49152": toTarget, "target/to_target/49152": toTarget,
		"source/from_target/49152": fromTarget, "target/from_target/49152": fromTarget,
	} {
		if int64(got[k]) != want {
			t.Errorf("metric %s = %v, want %d (all: %v)", k, got[k], want, got)
		}
	}
}
