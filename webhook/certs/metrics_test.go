package certs

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestExpiryCollector(t *testing.T) {
	o := testOptions()
	ca := mkCA(t, t0, o.CAValidity)
	crt, key := ca.leaf(t, t0, o)
	r := &Rotator{opts: o}
	c := r.ExpiryCollector()
	if got := testutil.ToFloat64(c); got != 0 {
		t.Errorf("before a certificate is loaded: %v, want 0", got)
	}
	if err := r.load(context.Background(), t0.Add(1), map[string][]byte{KeyCert: crt, KeyKey: key}); err != nil {
		t.Fatal(err)
	}
	if got, want := testutil.ToFloat64(c), float64(mustParse(t, crt).NotAfter.Unix()); got != want {
		t.Errorf("expiry %v, want the served certificate's NotAfter %v", got, want)
	}
}
