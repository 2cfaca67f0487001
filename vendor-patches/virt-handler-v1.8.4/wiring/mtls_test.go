package wiring

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	v1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/log"
	ephemeraldiskutils "kubevirt.io/kubevirt/pkg/ephemeral-disk-utils"
	"kubevirt.io/kubevirt/pkg/pointer"
	"kubevirt.io/kubevirt/pkg/testutils"
	kvtls "kubevirt.io/kubevirt/pkg/util/tls"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// Common names KubeVirt's certificates carry (kubevirt.io:system:<kind>:<type>,
// checked by pkg/util/tls verifyPeerCert).
const (
	serverCN = "kubevirt.io:system:node:virt-handler"
	clientCN = "kubevirt.io:system:client:virt-handler"
)

// ca is a test CA issuing KubeVirt-shaped certificates.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubevirt.io"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &ca{cert: cert, key: key}
}

func (c *ca) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// caManager is KubeVirt's own CA manager (kvtls.NewCAManager) over a store
// holding the kubevirt-ca ConfigMap, as virt-handler's informer does.
func (c *ca) caManager(t *testing.T) kvtls.ClientCAManager {
	t.Helper()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
	if err := store.Add(&k8sv1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt-ca"},
		Data:       map[string]string{"ca-bundle": string(bundle)},
	}); err != nil {
		t.Fatal(err)
	}
	return kvtls.NewCAManager(store, "kubevirt", "kubevirt-ca")
}

// certManager hands out one certificate (k8s.io/client-go/util/certificate.Manager).
type certManager struct{ cert *tls.Certificate }

func (m certManager) Start()                    {}
func (m certManager) Stop()                     {}
func (m certManager) Current() *tls.Certificate { return m.cert }
func (m certManager) ServerHealthy() bool       { return true }

// refusalLog counts the proxy's "refused inbound migration connection" lines per
// uid in KubeVirt's log: the server side's own word that it refused a client.
type refusalLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	count map[string]int
	// changed is closed, and replaced, whenever a refusal is counted: waitMore waits on it.
	changed chan struct{}
}

func (l *refusalLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line) // partial: keep for the next write
			break
		}
		if strings.Contains(line, "refused inbound migration connection") {
			if i := strings.Index(line, `"uid":"`); i >= 0 {
				rest := line[i+7:]
				l.count[rest[:strings.IndexByte(rest, '"')]]++
				close(l.changed)
				l.changed = make(chan struct{})
			}
		}
	}
	return len(p), nil
}

// waitMore waits until more than than refusals of uid are counted, at most d, and returns the
// count: woken by the log line itself, not by polling.
func (l *refusalLog) waitMore(uid string, than int, d time.Duration) int {
	timeout := time.After(d)
	for {
		l.mu.Lock()
		n, changed := l.count[uid], l.changed
		l.mu.Unlock()
		if n > than {
			return n
		}
		select {
		case <-changed:
		case <-timeout:
			return n
		}
	}
}

func (l *refusalLog) refusals(uid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[uid]
}

// virt-handler's migration TLS, built by KubeVirt's own code as cmd/virt-handler
// builds it (kvtls.SetupTLSForVirtHandlerServer with the default migration CN
// types, kvtls.SetupTLSForVirtHandlerClients), on the patched v1.8.4 proxy: the
// target proxy refuses a client without a certificate, with a foreign CA's
// certificate (the client, KubeVirt's own config, trusts the real CA), with a
// wrong identity, and one that drops the handshake. Each refusal is asserted from
// the server's side (the target proxy's log), none reaches the target's QEMU
// socket, and virt-handler's own client still gets through.
func TestKubeVirtTLSConfigsRefuseStrangers(t *testing.T) {
	ephemeraldiskutils.MockDefaultOwnershipManager()
	rlog := &refusalLog{count: map[string]int{}, changed: make(chan struct{})}
	log.Log.SetIOWriter(rlog)
	real, foreign := newCA(t), newCA(t)
	caMgr := real.caManager(t)
	cfg, _, _ := testutils.NewFakeClusterConfigUsingKVConfig(&v1.KubeVirtConfiguration{
		MigrationConfiguration: &v1.MigrationConfiguration{DisableTLS: pointer.P(false)},
	})
	server := kvtls.SetupTLSForVirtHandlerServer(caMgr, certManager{real.issue(t, serverCN, x509.ExtKeyUsageServerAuth)}, false, cfg, []string{"virt-handler", "migration"})
	clientWith := func(cert *tls.Certificate) *tls.Config {
		return kvtls.SetupTLSForVirtHandlerClients(caMgr, certManager{cert}, false)
	}
	client := clientWith(real.issue(t, clientCN, x509.ExtKeyUsageClientAuth))

	dir := t.TempDir()
	const key = "vmi-kubevirt-tls"
	backendPath := filepath.Join(dir, key+"-49152")
	backend, err := net.Listen("unix", backendPath)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	target, err := migrationproxy.NewMigrationProxyManagerForAddress("127.0.0.1", server, client, client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := startTarget(target, key, dir, backendPath); err != nil {
		t.Fatal(err)
	}
	defer target.StopTargetListener(key)
	ports := target.GetTargetListenerPorts(key)
	var addr string
	for p := range ports {
		addr = net.JoinHostPort("127.0.0.1", p)
	}

	noCert := clientWith(nil)
	noCert.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	for _, s := range []struct {
		name string
		cfg  *tls.Config // nil: TCP connect, then close before any ClientHello
	}{
		{"no client certificate", noCert},
		{"certificate from a foreign CA", clientWith(foreign.issue(t, clientCN, x509.ExtKeyUsageClientAuth))},
		{"wrong identity (CN)", clientWith(real.issue(t, "kubevirt.io:system:client:intruder", x509.ExtKeyUsageClientAuth))},
		{"drops the handshake", nil},
	} {
		before := rlog.refusals(key)
		seen, err := probe(addr, s.cfg)
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
		if n := rlog.waitMore(key, before, 5*time.Second) - before; n != 1 {
			t.Errorf("%s (client saw %q): the target proxy logged %d refusals, want 1", s.name, seen, n)
		} else {
			t.Logf("%s refused: server logged the refusal, client saw %q", s.name, seen)
		}
		select {
		case c := <-accepted:
			c.Close()
			t.Errorf("%s: a refused client reached the target's QEMU socket", s.name)
		case <-time.After(200 * time.Millisecond):
		}
	}

	// virt-handler's own client, through the source proxy, gets through.
	source, err := migrationproxy.NewMigrationProxyManagerForAddress("127.0.0.1", server, client, client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := source.StartSourceListener(key, "127.0.0.1", ports, dir); err != nil {
		t.Fatal(err)
	}
	defer source.StopSourceListener(key)
	c, err := net.Dial("unix", source.GetSourceListenerFiles(key)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("qemu")); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-accepted:
		got := make([]byte, 4)
		_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := b.Read(got); err != nil || string(got) != "qemu" {
			t.Errorf("virt-handler's client: backend read %q, %v", got, err)
		}
		b.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("virt-handler's own client did not get through")
	}
}

// probe connects with cfg and returns the server's alert ("remote error: ...").
// A client that completes and then sees no refusal was let in: an error.
func probe(addr string, cfg *tls.Config) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if cfg == nil {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return "", err
		}
		return "dropped", c.Close()
	}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err == nil {
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		if err == nil {
			return "", errors.New("server let the client in: it read data")
		}
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return err.Error(), nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "", fmt.Errorf("server let the client in: no refusal within 5s (%v)", err)
	}
	return "", fmt.Errorf("not refused by a server alert: %w", err)
}
