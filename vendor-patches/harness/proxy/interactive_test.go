package proxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// The libvirt connection is request/response: the proxies must pass every
// message on at once, whatever they do to batch bulk data (TLS records are
// gathered and read ahead since patch 0005). Messages of several sizes, from one
// byte to more than one TLS record, each echoed within a second.
func TestRequestResponseIsNotHeldBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"mTLS", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var p *pair
			if tc.tls {
				p = newPair(t, pkiOrFatal(t))
			} else {
				p = newPair(t, nil)
			}
			client, err := net.DialTimeout("unix", p.sourceSock, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			backend := acceptWithin(p.backend, 5*time.Second)
			if backend == nil {
				t.Fatal("no connection reached the backend")
			}
			defer backend.Close()
			go func() { _, _ = io.Copy(backend, backend) }() // echo
			for i, size := range []int{1, 7, 100, 4096, 16 << 10, 16<<10 + 1, 40 << 10, 3} {
				msg := bytes.Repeat([]byte{byte('a' + i)}, size)
				_ = client.SetDeadline(time.Now().Add(time.Second))
				if _, err := client.Write(msg); err != nil {
					t.Fatalf("message %d (%d bytes): write: %v", i, size, err)
				}
				got := make([]byte, size)
				if _, err := io.ReadFull(client, got); err != nil {
					t.Fatalf("message %d (%d bytes) not echoed within 1s: %v", i, size, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("message %d (%d bytes): echo differs", i, size)
				}
			}
		})
	}
}
