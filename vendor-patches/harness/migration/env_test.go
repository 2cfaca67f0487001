package migration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
	"github.com/migranet/migranet/vendor-patches/harness/netlab"
	"github.com/migranet/migranet/vendor-patches/harness/node"
	"github.com/migranet/migranet/vendor-patches/harness/qemu"
)

var assets *qemu.Assets

func TestMain(m *testing.M) {
	if os.Getenv(node.EnvRole) != "" {
		if err := node.Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "node:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "vpguest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if assets, err = qemu.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building the guest:", err)
		return 1
	}
	return m.Run()
}

// env is the lab plus one node process per namespace.
type env struct {
	lab            *netlab.Lab
	source, target *node.Client
	tls            bool
	pki            []byte // exported PKI the nodes were given (nil without TLS)
}

func newEnv(t testing.TB, withTLS bool) *env {
	t.Helper()
	if err := netlab.Probe(); err != nil {
		t.Skipf("network namespaces cannot be created here, skipping the QEMU suite: %v", err)
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Fatalf("qemu-system-x86_64 missing (apt-get install --no-install-recommends qemu-system-x86): %v", err)
	}
	lab, err := netlab.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lab.Close)
	for _, n := range lab.Notes {
		t.Log(n)
	}
	var blob []byte
	if withTLS {
		pki, err := kvproxy.NewPKI()
		if err != nil {
			t.Fatal(err)
		}
		if blob, err = pki.Export(); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{lab: lab, tls: withTLS, pki: blob}
	for _, n := range []struct {
		c    **node.Client
		ns   string
		bind string
	}{{&e.source, lab.Source, lab.SourceMig}, {&e.target, lab.Target, lab.TargetMig}} {
		c, err := node.Spawn(n.ns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		if _, err := c.Do(node.Request{Op: "init", Bind: n.bind, PKI: blob}); err != nil {
			t.Fatal(err)
		}
		*n.c = c
	}
	return e
}

// usage is a node's fds and goroutines.
func usage(t testing.TB, c *node.Client) node.Response {
	t.Helper()
	r, err := c.Do(node.Request{Op: "usage"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// expectBack fails unless the node's fds and goroutines return to base within 5 s.
func expectBack(t testing.TB, what string, c *node.Client, base node.Response) {
	t.Helper()
	var now node.Response
	deadline := time.Now().Add(5 * time.Second)
	for {
		now = usage(t, c)
		if now.FDs <= base.FDs && now.Goroutines <= base.Goroutines {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: leaked: fds %d -> %d, goroutines %d -> %d", what, base.FDs, now.FDs, base.Goroutines, now.Goroutines)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flight is one migration in flight: two VMs and the proxies for key.
type flight struct {
	key, dir   string
	src, dst   *qemu.VM
	targetPort string
	sourceSock string
}

// prepare starts both VMs and the proxy pair; the destination is not yet
// listening (call listen).
func (e *env) prepare(t testing.TB, key string, o qemu.Options) *flight {
	t.Helper()
	dir, err := os.MkdirTemp("", "vpq")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &flight{key: key, dir: dir}
	f.src, f.dst = e.startVMs(t, dir, o)
	r, err := e.target.Do(node.Request{Op: "start-target", Key: key, Sockets: []string{f.dstSocket()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ports) != 1 {
		t.Fatalf("target ports %v", r.Ports)
	}
	for p := range r.Ports {
		f.targetPort = p
	}
	s, err := e.source.Do(node.Request{Op: "start-source", Key: key, Addr: e.lab.TargetMig, Ports: r.Ports, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 1 {
		t.Fatalf("source files %v", s.Files)
	}
	f.sourceSock = s.Files[0]
	t.Cleanup(func() {
		_, _ = e.source.Do(node.Request{Op: "stop", Key: key})
		_, _ = e.target.Do(node.Request{Op: "stop", Key: key})
	})
	return f
}

// startVMs starts a source VM in the source namespace and an incoming one
// (-incoming defer) in the target namespace, both prepared with o.
func (e *env) startVMs(t testing.TB, dir string, o qemu.Options) (src, dst *qemu.VM) {
	t.Helper()
	dst, err := qemu.Start([]string{"ip", "netns", "exec", e.lab.Target}, dir, "dst", assets, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Kill)
	if src, err = qemu.Start([]string{"ip", "netns", "exec", e.lab.Source}, dir, "src", assets, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Kill)
	for _, q := range []*qemu.QMP{src.QMP, dst.QMP} {
		if err := qemu.Prepare(q, o); err != nil {
			t.Fatal(err)
		}
	}
	return src, dst
}

func (f *flight) dstSocket() string {
	return filepath.Join(f.dir, f.key+"-"+strconv.Itoa(49152))
}

func (f *flight) listen(t testing.TB) {
	t.Helper()
	if err := qemu.Incoming(f.dst.QMP, "unix:"+f.dstSocket()); err != nil {
		t.Fatal(err)
	}
}

func (f *flight) migrate(o qemu.Options) (qemu.MigrationInfo, time.Duration, error) {
	return qemu.Migrate(f.src.QMP, f.dst.QMP, "unix:"+f.sourceSock, o)
}
