package certs

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o Options)
	}{
		{name: "nothing set: the Secret is not used", args: nil, check: func(t *testing.T, o Options) {
			if o.SecretName != "" || o.Rotate {
				t.Errorf("Secret %q, rotation %v", o.SecretName, o.Rotate)
			}
		}},
		{name: "rotation without a Secret", args: []string{"--cert-rotation"}, wantErr: "--cert-rotation needs --cert-secret"},
		{name: "built-in issuer with the manifests' names", args: []string{"--cert-secret=s", "--cert-rotation"}, check: func(t *testing.T, o Options) {
			if o.ServiceName != DefaultServiceName || !slices.Equal(o.WebhookConfigurations, []string{DefaultWebhookConfiguration}) {
				t.Errorf("service %q, configurations %v", o.ServiceName, o.WebhookConfigurations)
			}
			if o.CertValidity != DefaultCertValidity || o.CAValidity != DefaultCAValidity || o.RenewBefore != 0 {
				t.Errorf("validities %s %s %s", o.CertValidity, o.CAValidity, o.RenewBefore)
			}
		}},
		{name: "lists replace the default and accumulate", args: []string{"--cert-secret=s", "--cert-rotation",
			"--webhook-configuration=a,b", "--webhook-configuration", "c", "--cert-extra-sans=127.0.0.1, localhost"},
			check: func(t *testing.T, o Options) {
				if !slices.Equal(o.WebhookConfigurations, []string{"a", "b", "c"}) || !slices.Equal(o.ExtraSANs, []string{"127.0.0.1", "localhost"}) {
					t.Errorf("configurations %v, SANs %v", o.WebhookConfigurations, o.ExtraSANs)
				}
			}},
		{name: "durations", args: []string{"--cert-secret=s", "--cert-rotation", "--cert-validity=720h", "--ca-validity=8760h", "--cert-renew-before=240h"},
			check: func(t *testing.T, o Options) {
				if o.CertValidity != 720*time.Hour || o.CAValidity != 8760*time.Hour || o.RenewBefore != 240*time.Hour {
					t.Errorf("validities %s %s %s", o.CertValidity, o.CAValidity, o.RenewBefore)
				}
			}},
		{name: "CA too short", args: []string{"--cert-secret=s", "--cert-rotation", "--cert-validity=720h", "--ca-validity=1000h"},
			wantErr: "at least three times"},
		{name: "no configuration to inject into", args: []string{"--cert-secret=s", "--cert-rotation", "--webhook-configuration="},
			wantErr: "no webhook configuration"},
		{name: "external issuer ignores the issuer's flags", args: []string{"--cert-secret=s", "--webhook-configuration=", "--ca-validity=1h"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o := Options{Namespace: "ns"}
			o.BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.CheckFlags()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}
