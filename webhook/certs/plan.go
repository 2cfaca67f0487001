package certs

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// Decision is what Plan decided.
type Decision struct {
	// Next is what the Secret should hold; nil keeps what it holds.
	Next *Material
	// Reason says why Next differs from the current material or, when Next is nil, what is
	// being waited for (empty when nothing is).
	Reason string
	// Recheck is when the decision may change through the passing of time alone.
	Recheck time.Time
}

// Plan decides what the certificate Secret of the built-in issuer should hold next, given what it
// holds (cur, nil for nothing) and for how long every webhook configuration has carried its CA
// bundle (publishedFor, 0 when one does not). Apart from generating keys it is a pure function of
// its arguments; opts are used with their defaults.
//
// The CA is replaced when ca.key is missing, unreadable or matches no certificate of ca.crt, or
// when the CA has expired or less than a third of its validity remains; older CAs stay in the
// bundle until they expire. The serving certificate is replaced when it is missing or unreadable,
// its names differ from the wanted ones, it has expired or less than RenewBefore remains, or no CA
// of the bundle signed it. A serving certificate signed by an older CA of the bundle is replaced
// only once the bundle holding the new CA has been published for BundleSettle, so that clients
// still holding the old bundle keep trusting the served certificate while the new one spreads.
func Plan(now time.Time, cur *Material, publishedFor time.Duration, opts Options) (Decision, error) {
	o := opts.WithDefaults()
	if cur == nil {
		cur = &Material{}
	}
	next := *cur
	next.Problems = nil
	var reasons []string

	signer, why := signingCA(now, cur, o)
	if signer != nil {
		if err := canIssue(now, signer, cur.CAKey, o); err != nil {
			signer, why = nil, fmt.Sprintf("CA %s cannot issue a serving certificate clients accept (%v)", signer.Subject.CommonName, err)
		}
	}
	if signer == nil {
		ca, key, keyPEM, err := newCA(now, o.CAValidity)
		if err != nil {
			return Decision{}, fmt.Errorf("generating a CA: %w", err)
		}
		next.CAs = append([]*x509.Certificate{ca}, validCAs(now, cur.CAs, nil)...)
		next.CAKey, next.CAKeyPEM, signer = key, keyPEM, ca
		reasons = append(reasons, why+": new CA "+ca.Subject.CommonName)
	} else {
		next.CAs = append([]*x509.Certificate{signer}, validCAs(now, cur.CAs, signer)...)
		if len(next.CAs) != len(cur.CAs) || !sameCerts(next.CAs, cur.CAs) || bundleProblem(cur) {
			reasons = append(reasons, "ca.crt: signing CA first, expired and unreadable entries dropped")
		}
	}
	bundleChanged := !sameCerts(next.CAs, cur.CAs)

	why, wait, waitUntil := planServing(now, cur, next.CAs, signer, bundleChanged, publishedFor, o)
	if why != "" {
		dns, ips := o.SANs()
		certPEM, keyPEM, err := newServing(now, signer, next.CAKey, dns, ips, o.CertValidity)
		if err != nil {
			return Decision{}, fmt.Errorf("issuing a serving certificate: %w", err)
		}
		if next.Serving, err = servingPair(certPEM, keyPEM); err != nil {
			return Decision{}, err
		}
		next.CertPEM, next.KeyPEM = certPEM, keyPEM
		reasons = append(reasons, why+": new serving certificate")
	}

	d := Decision{Recheck: recheck(now, &next, signer, waitUntil, o)}
	if len(reasons) > 0 {
		d.Next = &next
		reasons = append(reasons, wait)
	} else {
		reasons = []string{wait}
	}
	d.Reason = strings.Join(slices.DeleteFunc(reasons, func(s string) bool { return s == "" }), "; ")
	return d, nil
}

// planServing decides about the serving certificate given the next bundle (cas, signer first):
// why it must be re-issued now, or what it waits for and until when ("" and zero for neither).
func planServing(now time.Time, cur *Material, cas []*x509.Certificate, signer *x509.Certificate, bundleChanged bool,
	publishedFor time.Duration, o Options) (why, wait string, waitUntil time.Time) {
	if why = servingProblem(now, cur, o); why != "" {
		return why, "", time.Time{}
	}
	leaf := cur.Serving.Leaf
	switch issuer := issuerIn(now, leaf, cas); {
	case issuer == nil:
		why = "serving certificate is not signed by a CA of ca.crt"
	case issuer.Equal(signer):
		why = renewalDue(now, leaf, o)
	default:
		// Signed by an older CA of the bundle: switch once the bundle with the signing CA
		// has settled, and wait for that even when the certificate comes due (the older
		// CA's key is gone), unless it would expire first.
		toSettle := o.BundleSettle - publishedFor
		if bundleChanged {
			toSettle = o.BundleSettle
		}
		switch {
		case toSettle <= 0:
			why = fmt.Sprintf("serving certificate is signed by the older CA %s and the bundle with CA %s has been published for %s",
				issuer.Subject.CommonName, signer.Subject.CommonName, publishedFor.Round(time.Millisecond))
		case leaf.NotAfter.Sub(now) <= 2*toSettle:
			why = fmt.Sprintf("serving certificate of the older CA %s expires at %s, before the bundle with CA %s settles",
				issuer.Subject.CommonName, leaf.NotAfter.UTC().Format(time.RFC3339), signer.Subject.CommonName)
		default:
			wait = fmt.Sprintf("serving certificate switches to CA %s once the bundle has been in every webhook configuration for %s",
				signer.Subject.CommonName, o.BundleSettle)
			waitUntil = now.Add(toSettle)
			if t := leaf.NotAfter.Add(-2 * toSettle); t.Before(waitUntil) {
				waitUntil = t
			}
		}
	}
	return why, wait, waitUntil
}

// signingCA returns the CA that signs new certificates, or nil and why a new CA is needed.
func signingCA(now time.Time, cur *Material, o Options) (*x509.Certificate, string) {
	switch {
	case cur.CAKey == nil && len(cur.CAKeyPEM) > 0:
		return nil, "ca.key is unreadable"
	case cur.CAKey == nil && len(cur.CAs) == 0:
		return nil, "no CA yet"
	case cur.CAKey == nil:
		return nil, "no CA key (ca.key): the CA in ca.crt was not issued by migranet"
	}
	i := slices.IndexFunc(cur.CAs, func(c *x509.Certificate) bool { return samePublicKey(c, cur.CAKey) })
	if i < 0 {
		return nil, "ca.key matches no certificate of ca.crt"
	}
	ca := cur.CAs[i]
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	switch _, err := ca.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now}); {
	case now.After(ca.NotAfter):
		return nil, fmt.Sprintf("CA %s expired at %s", ca.Subject.CommonName, ca.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(ca.NotBefore):
		return nil, fmt.Sprintf("CA %s is not valid before %s", ca.Subject.CommonName, ca.NotBefore.UTC().Format(time.RFC3339))
	case err != nil:
		return nil, fmt.Sprintf("CA %s is unusable: %v", ca.Subject.CommonName, err)
	case ca.NotAfter.Sub(now) < o.caRenewBefore():
		return nil, fmt.Sprintf("CA %s expires at %s, less than %s from now", ca.Subject.CommonName, ca.NotAfter.UTC().Format(time.RFC3339), o.caRenewBefore())
	}
	return ca, ""
}

// canIssue issues a throwaway serving certificate with ca and checks that a client trusting ca
// alone accepts it: a CA whose extensions forbid it (key usage, name constraints, extended key
// usage) is replaced rather than used.
func canIssue(now time.Time, ca *x509.Certificate, key crypto.Signer, o Options) error {
	dns, ips := o.SANs()
	certPEM, keyPEM, err := newServing(now, ca, key, dns, ips, o.CertValidity)
	if err != nil {
		return err
	}
	pair, err := servingPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	if issuerIn(now, pair.Leaf, []*x509.Certificate{ca}) == nil {
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		_, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	return nil
}

// servingProblem says what makes the serving certificate unusable on its own (its chain and
// coming renewal aside), or "" when nothing does.
func servingProblem(now time.Time, cur *Material, o Options) string {
	if cur.Serving == nil {
		if len(cur.CertPEM) == 0 && len(cur.KeyPEM) == 0 {
			return "no serving certificate yet"
		}
		_, err := servingPair(cur.CertPEM, cur.KeyPEM)
		return fmt.Sprintf("serving certificate unusable (%v)", err)
	}
	leaf := cur.Serving.Leaf
	dns, ips := o.SANs()
	gotDNS, gotIPs := slices.Sorted(slices.Values(leaf.DNSNames)), leaf.IPAddresses
	if !slices.Equal(dns, gotDNS) || !slices.EqualFunc(ips, sortedIPs(gotIPs), net.IP.Equal) {
		return fmt.Sprintf("serving certificate names %s, want %s", sanList(gotDNS, gotIPs), sanList(dns, ips))
	}
	switch {
	case now.After(leaf.NotAfter):
		return fmt.Sprintf("serving certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fmt.Sprintf("serving certificate is not valid before %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return ""
}

// renewalDue says that the serving certificate comes due, or "" when it does not.
func renewalDue(now time.Time, leaf *x509.Certificate, o Options) string {
	if leaf.NotAfter.Sub(now) < o.RenewBefore {
		return fmt.Sprintf("serving certificate expires at %s, less than %s from now", leaf.NotAfter.UTC().Format(time.RFC3339), o.RenewBefore)
	}
	return ""
}

// issuerIn returns the CA of cas that a client trusting only it would accept leaf from, at now.
func issuerIn(now time.Time, leaf *x509.Certificate, cas []*x509.Certificate) *x509.Certificate {
	for _, ca := range cas {
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
			return ca
		}
	}
	return nil
}

// validCAs returns the CAs valid at now, without skip and duplicates, in order.
func validCAs(now time.Time, cas []*x509.Certificate, skip *x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range cas {
		if now.After(c.NotAfter) || (skip != nil && c.Equal(skip)) || slices.ContainsFunc(out, c.Equal) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// recheck is when m needs a look again: the serving certificate or the CA come due, a wait for
// the bundle to settle ends (waitUntil, zero when not waiting), or an older CA expires and
// leaves the bundle.
func recheck(now time.Time, m *Material, signer *x509.Certificate, waitUntil time.Time, o Options) time.Time {
	at := signer.NotAfter.Add(-o.caRenewBefore())
	leafDue := m.Serving.Leaf.NotAfter.Add(-o.RenewBefore)
	if !waitUntil.IsZero() {
		leafDue = waitUntil
	}
	if leafDue.Before(at) {
		at = leafDue
	}
	for _, c := range m.CAs {
		if t := c.NotAfter.Add(time.Second); !c.Equal(signer) && t.Before(at) {
			at = t
		}
	}
	if at.Before(now) {
		return now
	}
	return at
}

func bundleProblem(m *Material) bool {
	return slices.ContainsFunc(m.Problems, func(p string) bool { return strings.HasPrefix(p, KeyCA+":") })
}

func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, (*x509.Certificate).Equal)
}

func sortedIPs(ips []net.IP) []net.IP {
	out := slices.Clone(ips)
	slices.SortFunc(out, func(a, b net.IP) int { return slices.Compare(a.To16(), b.To16()) })
	return out
}

func sanList(dns []string, ips []net.IP) string {
	names := slices.Clone(dns)
	for _, ip := range ips {
		names = append(names, ip.String())
	}
	return "[" + strings.Join(names, " ") + "]"
}
