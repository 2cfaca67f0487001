package migration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	if skipped, _ := qemuSuiteOptOut(); skipped {
		return m.Run() // every QEMU test skips itself and says why
	}
	if err := qemuPrerequisites(); err != nil {
		return m.Run() // every QEMU test fails naming the prerequisite
	}
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

// SuiteName is this suite's name in MIGRANET_TEST_SKIP.
const SuiteName = "qemu"

// qemuSuiteOptOut reports whether MIGRANET_TEST_SKIP (a comma-separated list of
// suite names, the one documented opt-out) lists this suite, and the skip message.
func qemuSuiteOptOut() (bool, string) {
	for _, s := range strings.Split(os.Getenv("MIGRANET_TEST_SKIP"), ",") {
		if strings.TrimSpace(s) == SuiteName {
			return true, "skipped by the opt-out: MIGRANET_TEST_SKIP lists " + SuiteName
		}
	}
	return false, ""
}

// qemuPrerequisites names the first missing prerequisite of the QEMU suite and
// how to get it: QEMU first, then binutils (the guest is assembled), then the
// privilege to create network namespaces. A missing one fails the run; only
// MIGRANET_TEST_SKIP=qemu skips the suite.
func qemuPrerequisites() error {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return fmt.Errorf("prerequisite missing: qemu-system-x86_64 (apt-get install --no-install-recommends qemu-system-x86), or set MIGRANET_TEST_SKIP=%s: %v", SuiteName, err)
	}
	for _, b := range []string{"as", "ld"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("prerequisite missing: %s (apt-get install binutils), or set MIGRANET_TEST_SKIP=%s: %v", b, SuiteName, err)
		}
	}
	if err := netlab.Probe(); err != nil {
		return fmt.Errorf("prerequisite missing: the privilege to create network namespaces (run as root / with CAP_SYS_ADMIN and CAP_NET_ADMIN), or set MIGRANET_TEST_SKIP=%s: %v", SuiteName, err)
	}
	return nil
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
	if skipped, why := qemuSuiteOptOut(); skipped {
		t.Skip(why)
	}
	if err := qemuPrerequisites(); err != nil {
		t.Fatal(err)
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
