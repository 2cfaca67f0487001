package certs

import (
	"crypto/x509"
	"testing"
	"time"
)

// FuzzPlan feeds arbitrary Secret contents to ParseMaterial and Plan: neither may panic, and
// whatever Plan writes must be consistent and trusted by its own bundle.
func FuzzPlan(f *testing.F) {
	o := testOptions()
	ca, caKey, caKeyPEM, err := newCA(t0, o.CAValidity)
	if err != nil {
		f.Fatal(err)
	}
	dns, ips := o.SANs()
	crt, key, err := newServing(t0, ca, caKey, dns, ips, o.CertValidity)
	if err != nil {
		f.Fatal(err)
	}
	bundle := EncodeBundle([]*x509.Certificate{ca})
	f.Add(crt, key, bundle, caKeyPEM, int64(0))
	f.Add(crt, key, bundle, caKeyPEM, int64(250*time.Hour))
	f.Add([]byte("x"), key, crt, key, int64(time.Hour))
	f.Add([]byte{}, []byte{}, []byte{}, []byte{}, int64(0))
	f.Fuzz(func(t *testing.T, crt, key, bundle, caKey []byte, offset int64) {
		now := t0.Add(time.Duration(offset))
		m := ParseMaterial(map[string][]byte{KeyCert: crt, KeyKey: key, KeyCA: bundle, KeyCAKey: caKey})
		d, err := Plan(now, m, time.Duration(offset%int64(2*time.Minute)), o)
		if err != nil {
			t.Fatal(err)
		}
		if d.Next == nil {
			return
		}
		next := ParseMaterial(d.Next.Data())
		if len(next.Problems) > 0 || next.Serving == nil || next.CAKey == nil || issuerIn(now, next.Serving.Leaf, next.CAs) == nil {
			t.Fatalf("inconsistent material written: problems %v", next.Problems)
		}
	})
}
