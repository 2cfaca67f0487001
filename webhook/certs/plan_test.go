package certs

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func testOptions() Options {
	return Options{
		Namespace: "migranet-system", SecretName: "cert", ServiceName: "migranet-webhook",
		ExtraSANs: []string{"127.0.0.1"}, WebhookConfigurations: []string{"migranet"}, Rotate: true,
		CAValidity: 300 * time.Hour, CertValidity: 90 * time.Hour, RenewBefore: 30 * time.Hour, BundleSettle: time.Minute,
	}.WithDefaults()
}

// testCA is a CA made for a test case.
type testCA struct {
	cert   *x509.Certificate
	key    crypto.Signer
	keyPEM []byte
}

func mkCA(t *testing.T, issued time.Time, validity time.Duration) testCA {
	t.Helper()
	c, k, p, err := newCA(issued, validity)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{c, k, p}
}

// leaf returns tls.crt and tls.key issued by ca at issued for opts' names.
func (ca testCA) leaf(t *testing.T, issued time.Time, o Options) ([]byte, []byte) {
	t.Helper()
	dns, ips := o.SANs()
	c, k, err := newServing(issued, ca.cert, ca.key, dns, ips, o.CertValidity)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

// secret assembles Secret data: the serving pair, the bundle, and the signing key.
func secret(certPEM, keyPEM []byte, key *testCA, bundle ...*x509.Certificate) map[string][]byte {
	d := map[string][]byte{KeyCert: certPEM, KeyKey: keyPEM, KeyCA: EncodeBundle(bundle)}
	if key != nil {
		d[KeyCAKey] = key.keyPEM
	}
	return d
}

func TestPlan(t *testing.T) {
	o := testOptions()
	ca1 := mkCA(t, t0, o.CAValidity)
	ca2 := mkCA(t, t0.Add(200*time.Hour), o.CAValidity)
	foreign := mkCA(t, t0, o.CAValidity)
	fresh1, freshKey1 := ca1.leaf(t, t0, o)
	late1, lateKey1 := ca1.leaf(t, t0.Add(150*time.Hour), o)
	_, otherKey := ca1.leaf(t, t0, o)
	noIP := o
	noIP.ExtraSANs = nil
	narrow, narrowKey := ca1.leaf(t, t0, noIP)
	foreignLeaf, foreignKey := foreign.leaf(t, t0, o)
	byOld, byOldKey := ca1.leaf(t, t0.Add(190*time.Hour), o)
	late2, lateKey2 := ca2.leaf(t, t0.Add(290*time.Hour), o)

	cases := []struct {
		name      string
		data      map[string][]byte
		now       time.Time
		published time.Duration
		// wantReason is a part of the reason ("" for none at all).
		wantReason string
		// wantBundle names the CAs of the next bundle in order: "new", "ca1", "ca2", "foreign".
		// nil means the Secret stays as it is.
		wantBundle []string
		// wantLeaf is "new", "kept", or "" when the Secret stays.
		wantLeaf    string
		wantRecheck time.Time
	}{
		{name: "empty Secret", data: map[string][]byte{KeyCert: {}, KeyKey: {}}, now: t0,
			wantReason: "no CA yet", wantBundle: []string{"new"}, wantLeaf: "new"},
		{name: "nothing at all", data: nil, now: t0,
			wantReason: "no serving certificate yet", wantBundle: []string{"new"}, wantLeaf: "new"},
		{name: "garbage in every key", data: map[string][]byte{KeyCert: []byte("x"), KeyKey: []byte("y"), KeyCA: []byte("z"), KeyCAKey: []byte("w")},
			now: t0, wantReason: "ca.key is unreadable", wantBundle: []string{"new"}, wantLeaf: "new"},
		{name: "current material stays", data: secret(fresh1, freshKey1, &ca1, ca1.cert), now: t0.Add(time.Hour),
			wantRecheck: t0.Add(60 * time.Hour)},
		{name: "serving certificate expiring", data: secret(fresh1, freshKey1, &ca1, ca1.cert), now: t0.Add(61 * time.Hour),
			wantReason: "serving certificate expires at", wantBundle: []string{"ca1"}, wantLeaf: "new"},
		{name: "serving certificate expired", data: secret(fresh1, freshKey1, &ca1, ca1.cert), now: t0.Add(91 * time.Hour),
			wantReason: "serving certificate expired at", wantBundle: []string{"ca1"}, wantLeaf: "new"},
		{name: "names changed", data: secret(narrow, narrowKey, &ca1, ca1.cert), now: t0.Add(time.Hour),
			wantReason: "want [migranet-webhook", wantBundle: []string{"ca1"}, wantLeaf: "new"},
		{name: "key does not match the certificate", data: secret(fresh1, otherKey, &ca1, ca1.cert), now: t0.Add(time.Hour),
			wantReason: "serving certificate unusable", wantBundle: []string{"ca1"}, wantLeaf: "new"},
		{name: "serving certificate of a foreign CA", data: secret(foreignLeaf, foreignKey, &ca1, ca1.cert), now: t0.Add(time.Hour),
			wantReason: "not signed by a CA of ca.crt", wantBundle: []string{"ca1"}, wantLeaf: "new"},
		{name: "CA expiring: new CA first, old CA kept, serving certificate kept",
			data: secret(late1, lateKey1, &ca1, ca1.cert), now: t0.Add(201 * time.Hour),
			wantReason: "switches to CA", wantBundle: []string{"new", "ca1"}, wantLeaf: "kept",
			wantRecheck: t0.Add(201*time.Hour + time.Minute)},
		{name: "rollover waits until the bundle has settled",
			data: secret(byOld, byOldKey, &ca2, ca2.cert, ca1.cert), now: t0.Add(210 * time.Hour), published: 20 * time.Second,
			wantReason: "once the bundle has been in every webhook configuration", wantRecheck: t0.Add(210*time.Hour + 40*time.Second)},
		{name: "rollover waits while the bundle is not published",
			data: secret(byOld, byOldKey, &ca2, ca2.cert, ca1.cert), now: t0.Add(210 * time.Hour),
			wantReason: "once the bundle", wantRecheck: t0.Add(210*time.Hour + time.Minute)},
		{name: "rollover once the bundle has settled",
			data: secret(byOld, byOldKey, &ca2, ca2.cert, ca1.cert), now: t0.Add(210 * time.Hour), published: time.Minute,
			wantReason: "signed by the older CA", wantBundle: []string{"ca2", "ca1"}, wantLeaf: "new"},
		{name: "serving certificate of the old CA coming due waits for the bundle to settle",
			data: secret(byOld, byOldKey, &ca2, ca2.cert, ca1.cert), now: t0.Add(251 * time.Hour), published: 50 * time.Second,
			wantReason: "once the bundle", wantRecheck: t0.Add(251*time.Hour + 10*time.Second)},
		{name: "serving certificate of the old CA expiring before the bundle settles",
			data: secret(byOld, byOldKey, &ca2, ca2.cert, ca1.cert), now: t0.Add(280*time.Hour - 90*time.Second),
			wantReason: "before the bundle with CA", wantBundle: []string{"ca2", "ca1"}, wantLeaf: "new"},
		{name: "waiting ends early when the serving certificate of the old CA would expire",
			data: secret(byOld, byOldKey, &ca2, ca2.cert, ca1.cert), now: t0.Add(280*time.Hour - 150*time.Second),
			wantReason: "once the bundle", wantRecheck: t0.Add(280*time.Hour - 120*time.Second)},
		{name: "expired CA is replaced and dropped",
			data: secret(fresh1, freshKey1, &ca1, ca1.cert), now: t0.Add(301 * time.Hour),
			wantReason: "expired at", wantBundle: []string{"new"}, wantLeaf: "new"},
		{name: "expired older CA leaves the bundle",
			data: secret(late2, lateKey2, &ca2, ca2.cert, ca1.cert), now: t0.Add(301 * time.Hour),
			wantReason: "ca.crt: signing CA first", wantBundle: []string{"ca2"}, wantLeaf: "kept"},
		{name: "signing CA moves first", data: secret(fresh1, freshKey1, &ca1, foreign.cert, ca1.cert), now: t0.Add(time.Hour),
			wantReason: "ca.crt: signing CA first", wantBundle: []string{"ca1", "foreign"}, wantLeaf: "kept"},
		{name: "CA of another issuer, no ca.key (switch from cert-manager)",
			data: secret(foreignLeaf, foreignKey, nil, foreign.cert), now: t0.Add(time.Hour),
			wantReason: "no CA key", wantBundle: []string{"new", "foreign"}, wantLeaf: "kept"},
		{name: "ca.key matches no certificate of ca.crt",
			data: secret(fresh1, freshKey1, &foreign, ca1.cert), now: t0.Add(time.Hour),
			wantReason: "matches no certificate", wantBundle: []string{"new", "ca1"}, wantLeaf: "kept"},
		{name: "non-CA entries of ca.crt are dropped",
			data: func() map[string][]byte {
				d := secret(fresh1, freshKey1, &ca1, ca1.cert)
				d[KeyCA] = append(append(bytes.Clone(d[KeyCA]), foreignLeaf...), "junk"...)
				return d
			}(), now: t0.Add(time.Hour),
			wantReason: "ca.crt: signing CA first", wantBundle: []string{"ca1"}, wantLeaf: "kept"},
	}
	named := map[string]*x509.Certificate{"ca1": ca1.cert, "ca2": ca2.cert, "foreign": foreign.cert}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := ParseMaterial(tc.data)
			d, err := Plan(tc.now, cur, tc.published, o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantReason == "" && d.Reason != "" || !strings.Contains(d.Reason, tc.wantReason) {
				t.Errorf("reason %q, want one containing %q", d.Reason, tc.wantReason)
			}
			if !tc.wantRecheck.IsZero() && !d.Recheck.Equal(tc.wantRecheck) {
				t.Errorf("recheck at %s, want %s", d.Recheck, tc.wantRecheck)
			}
			if !d.Recheck.After(tc.now) {
				t.Errorf("recheck at %s, not after now %s", d.Recheck, tc.now)
			}
			if tc.wantBundle == nil {
				if d.Next != nil {
					t.Fatalf("Secret rewritten (%s), want it kept", d.Reason)
				}
				return
			}
			if d.Next == nil {
				t.Fatalf("Secret kept, want bundle %v and %s serving certificate", tc.wantBundle, tc.wantLeaf)
			}
			next := ParseMaterial(d.Next.Data())
			var gotBundle []string
			for _, c := range next.CAs {
				name := "new"
				for n, known := range named {
					if c.Equal(known) {
						name = n
					}
				}
				gotBundle = append(gotBundle, name)
			}
			if !slices.Equal(gotBundle, tc.wantBundle) {
				t.Errorf("bundle %v, want %v", gotBundle, tc.wantBundle)
			}
			kept := bytes.Equal(next.CertPEM, cur.CertPEM) && bytes.Equal(next.KeyPEM, cur.KeyPEM)
			if kept != (tc.wantLeaf == "kept") {
				t.Errorf("serving certificate kept: %v, want %s", kept, tc.wantLeaf)
			}
			checkConsistent(t, tc.now, next, o, tc.wantLeaf == "new")
			checkConverges(t, tc.now, next, o)
		})
	}
}

// checkConsistent checks what a written Secret must always satisfy.
func checkConsistent(t *testing.T, now time.Time, m *Material, o Options, newLeaf bool) {
	t.Helper()
	if len(m.Problems) > 0 {
		t.Errorf("written material has problems: %v", m.Problems)
	}
	if m.CAKey == nil || len(m.CAs) == 0 || !samePublicKey(m.CAs[0], m.CAKey) {
		t.Fatalf("ca.key does not belong to the first certificate of ca.crt")
	}
	if m.Serving == nil {
		t.Fatalf("no serving certificate written")
	}
	issuer := issuerIn(now, m.Serving.Leaf, m.CAs)
	if issuer == nil {
		t.Fatalf("serving certificate not trusted by the written bundle")
	}
	if newLeaf && !issuer.Equal(m.CAs[0]) {
		t.Errorf("new serving certificate issued by %s, not by the signing CA %s", issuer.Subject.CommonName, m.CAs[0].Subject.CommonName)
	}
	if why := servingProblem(now, m, o); why != "" {
		t.Errorf("written serving certificate: %s", why)
	}
	if newLeaf {
		if got := m.Serving.Leaf.NotAfter.Sub(now); got != o.CertValidity {
			t.Errorf("new serving certificate valid for %s, want %s", got, o.CertValidity)
		}
	}
	data := m.Data()
	if got := slices.Sorted(maps.Keys(data)); !slices.Equal(got, []string{KeyCA, KeyCAKey, KeyCert, KeyKey}) {
		t.Errorf("Secret keys %v", got)
	}
}

// checkConverges plans again on the written material: at most one more step (the serving
// certificate switching to the new CA once the bundle settled), then nothing.
func checkConverges(t *testing.T, now time.Time, m *Material, o Options) {
	t.Helper()
	for i := 0; i < 3; i++ {
		d, err := Plan(now, m, o.BundleSettle, o)
		if err != nil {
			t.Fatal(err)
		}
		if d.Next == nil {
			return
		}
		m = ParseMaterial(d.Next.Data())
	}
	t.Errorf("Plan keeps rewriting the Secret")
}

func TestParseMaterial(t *testing.T) {
	o := testOptions()
	ca := mkCA(t, t0, o.CAValidity)
	crt, key := ca.leaf(t, t0, o)
	cases := []struct {
		name         string
		data         map[string][]byte
		wantProblems []string
		wantServing  bool
		wantCAs      int
		wantCAKey    bool
	}{
		{name: "nothing", data: nil},
		{name: "complete", data: secret(crt, key, &ca, ca.cert), wantServing: true, wantCAs: 1, wantCAKey: true},
		{name: "certificate without key", data: map[string][]byte{KeyCert: crt}, wantProblems: []string{"tls.key is empty"}},
		{name: "key without certificate", data: map[string][]byte{KeyKey: key}, wantProblems: []string{"tls.crt is empty"}},
		{name: "garbage", data: map[string][]byte{KeyCert: []byte("a"), KeyKey: []byte("b"), KeyCA: []byte("c"), KeyCAKey: []byte("d")},
			wantProblems: []string{"tls.crt/tls.key", "ca.key: no PEM block", "ca.crt: 1 part(s)"}},
		{name: "RSA key in PKCS#1 form is not a certificate", data: map[string][]byte{KeyCAKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")},
			wantProblems: []string{"ca.key: PEM block \"RSA PRIVATE KEY\" is not"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := ParseMaterial(tc.data)
			if len(m.Problems) != len(tc.wantProblems) {
				t.Fatalf("problems %q, want %q", m.Problems, tc.wantProblems)
			}
			for i, p := range tc.wantProblems {
				if !strings.HasPrefix(m.Problems[i], p) {
					t.Errorf("problem %q, want it to start with %q", m.Problems[i], p)
				}
			}
			if (m.Serving != nil) != tc.wantServing || len(m.CAs) != tc.wantCAs || (m.CAKey != nil) != tc.wantCAKey {
				t.Errorf("serving %v, CAs %d, CA key %v; want %v, %d, %v", m.Serving != nil, len(m.CAs), m.CAKey != nil,
					tc.wantServing, tc.wantCAs, tc.wantCAKey)
			}
		})
	}
}
