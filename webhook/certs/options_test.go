package certs

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Options)
		want   []string // parts of the error; none means valid
	}{
		{name: "valid", change: func(*Options) {}},
		{name: "external issuer needs only the Secret", change: func(o *Options) {
			o.Rotate, o.ServiceName, o.WebhookConfigurations = false, "", nil
		}},
		{name: "no namespace or Secret", change: func(o *Options) { o.Namespace, o.SecretName = "", "" },
			want: []string{"namespace of the certificate Secret is empty", `certificate Secret name ""`}},
		{name: "issuer without service or configurations", change: func(o *Options) { o.ServiceName, o.WebhookConfigurations = "", nil },
			want: []string{`webhook Service name ""`, "no webhook configuration"}},
		{name: "bad extra SANs", change: func(o *Options) { o.ExtraSANs = []string{"127.0.0.1", "::1", "*.example.com", "Not_A_Name"} },
			want: []string{`extra SAN "Not_A_Name"`}},
		{name: "renew-before not shorter than the validity", change: func(o *Options) { o.RenewBefore = o.CertValidity },
			want: []string{"must be shorter than the certificate validity"}},
		{name: "CA too short-lived", change: func(o *Options) { o.CAValidity = 2 * o.CertValidity },
			want: []string{"at least three times"}},
		{name: "negative durations", change: func(o *Options) { o.CertValidity = -time.Hour },
			want: []string{"must be positive"}},
		{name: "renew-before too short for the bundle to settle", change: func(o *Options) { o.RenewBefore = 2 * o.BundleSettle },
			want: []string{"must exceed twice the bundle settle time"}},
		{name: "settle longer than the CA overlap", change: func(o *Options) { o.BundleSettle = o.CAValidity },
			want: []string{"must exceed the bundle settle time"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions()
			tc.change(&o)
			err := o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSANs(t *testing.T) {
	o := Options{Namespace: "ns", ServiceName: "svc", ExtraSANs: []string{"::1", "127.0.0.1", "svc", "extra.example", "127.0.0.1"}}
	dns, ips := o.SANs()
	wantDNS := []string{"extra.example", "svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"}
	if !slices.Equal(dns, wantDNS) {
		t.Errorf("DNS names %v, want %v", dns, wantDNS)
	}
	if want := []net.IP{net.ParseIP("::1"), net.ParseIP("127.0.0.1")}; !slices.EqualFunc(ips, want, net.IP.Equal) {
		t.Errorf("IPs %v, want %v", ips, want)
	}
}

func TestLoadKeepsTheLastGoodCertificate(t *testing.T) {
	o := testOptions()
	ca := mkCA(t, t0, o.CAValidity)
	crt1, key1 := ca.leaf(t, t0, o)
	crt2, key2 := ca.leaf(t, t0.Add(time.Hour), o)
	crtOld, keyOld := ca.leaf(t, t0.Add(-100*time.Hour), o)
	r := &Rotator{opts: o}
	ctx := context.Background()
	now := t0.Add(2 * time.Hour)
	if _, err := r.GetCertificate(nil); err == nil {
		t.Fatal("GetCertificate succeeded before anything was loaded")
	}
	steps := []struct {
		name    string
		data    map[string][]byte
		wantErr bool
		serving []byte // tls.crt expected to be served afterwards
	}{
		{name: "first certificate", data: map[string][]byte{KeyCert: crt1, KeyKey: key1}, serving: crt1},
		{name: "garbage keeps it", data: map[string][]byte{KeyCert: []byte("junk"), KeyKey: key1}, wantErr: true, serving: crt1},
		{name: "mismatched key keeps it", data: map[string][]byte{KeyCert: crt2, KeyKey: key1}, wantErr: true, serving: crt1},
		{name: "expired replacement keeps it", data: map[string][]byte{KeyCert: crtOld, KeyKey: keyOld}, wantErr: true, serving: crt1},
		{name: "valid replacement is served", data: map[string][]byte{KeyCert: crt2, KeyKey: key2}, serving: crt2},
		{name: "same again", data: map[string][]byte{KeyCert: crt2, KeyKey: key2}, serving: crt2},
	}
	for _, s := range steps {
		err := r.load(ctx, now, s.data)
		if (err != nil) != s.wantErr {
			t.Errorf("%s: error %v, want error %v", s.name, err, s.wantErr)
		}
		got, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !got.Leaf.Equal(mustParse(t, s.serving)) {
			t.Errorf("%s: serving serial %x, want the certificate of the step", s.name, got.Leaf.SerialNumber)
		}
	}
}

func mustParse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMutatingDefaults: without --mutating-webhook-configuration the mutating configurations are
// the validating ones' names, each optional (an install without one is no problem); named, they
// are required. Faults caught, each seen to fail once: no default (a replica started without the
// flag left the steering webhook without a CA bundle); the default required (every setup that
// renames its validating configuration stayed unready).
func TestMutatingDefaults(t *testing.T) {
	o := Options{WebhookConfigurations: []string{"a", "b"}}.WithDefaults()
	if !slices.Equal(o.MutatingWebhookConfigurations, []string{"a", "b"}) || !o.MutatingOptional {
		t.Errorf("defaulted: %v optional %v", o.MutatingWebhookConfigurations, o.MutatingOptional)
	}
	o = Options{WebhookConfigurations: []string{"a"}, MutatingWebhookConfigurations: []string{"m"}}.WithDefaults()
	if !slices.Equal(o.MutatingWebhookConfigurations, []string{"m"}) || o.MutatingOptional {
		t.Errorf("named: %v optional %v", o.MutatingWebhookConfigurations, o.MutatingOptional)
	}
}
