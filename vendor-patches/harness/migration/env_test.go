package migration

import (
	"crypto/rand"
	"fmt"
	"github.com/migranet/migranet/vendor-patches/harness/poll"
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

// qemuSuite starts every QEMU test (and newEnv): skipped by the opt-out, failed
// naming a missing prerequisite.
func qemuSuite(t testing.TB) {
	t.Helper()
	if skipped, why := qemuSuiteOptOut(); skipped {
		// Only with MIGRANET_TEST_SKIP naming this suite, which CI never sets; and make test's
		// summary (test/summary) is red on any skip unless that variable is set, so a skip
		// cannot pass CI unseen.
		t.Skip(why)
	}
	if err := qemuPrerequisites(); err != nil {
		t.Fatal(err)
	}
}

// env is the lab plus one node process per namespace.
type env struct {
	lab            *netlab.Lab
	source, target *node.Client
	tls            bool
	pki            []byte // exported PKI the nodes were given (nil without TLS)
	directPort     int    // the bench's direct migrations: last port offset used
}

func newEnv(t testing.TB, withTLS bool) *env {
	t.Helper()
	qemuSuite(t)
	lab, err := netlab.Open()
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

// expectBack fails unless the node's fds and proxy goroutines return to base
// within 5 s. The node's garbage collection should be off ("gc-off") from
// before the checked operation: a leaked socket is closed by its finalizer.
func expectBack(t testing.TB, what string, c *node.Client, base node.Response) {
	t.Helper()
	var now node.Response
	if !poll.Until(5*time.Second, func() bool {
		now = usage(t, c)
		return now.FDs <= base.FDs && now.ProxyGoroutines <= base.ProxyGoroutines
	}) {
		t.Errorf("%s: leaked: fds %d -> %d, proxy goroutines %d -> %d", what, base.FDs, now.FDs, base.ProxyGoroutines, now.ProxyGoroutines)
	}
}

// gc turns a node's garbage collection off (so a leak cannot be collected before
// it is counted) or back on.
func gc(t testing.TB, on bool, nodes ...*node.Client) {
	t.Helper()
	op := map[bool]string{false: "gc-off", true: "gc-on"}[on]
	for _, c := range nodes {
		if _, err := c.Do(node.Request{Op: op}); err != nil {
			t.Fatal(err)
		}
	}
}

// mgmtQuiet bounds what a management link may carry while a migration runs
// (IPv6 neighbour and router solicitations of a fresh veth): the migration
// moves hundreds of MiB.
const mgmtQuiet = 64 << 10

// migrateChecked migrates f and asserts what the suite proves of every
// migration: the guest memory of the paused source equals the destination's
// (qemu.Migrate), the stream crossed the migration link (its counters grew by at
// least what QEMU transferred, on both ends) while the management link stayed
// quiet, and the proxies' byte metrics agree exactly across the two nodes in
// both directions.
func (e *env) migrateChecked(t testing.TB, f *flight, o qemu.Options) (qemu.MigrationInfo, time.Duration, error) {
	t.Helper()
	before, err := e.lab.ReadLinks()
	if err != nil {
		t.Fatal(err)
	}
	info, took, err := f.migrate(o)
	if err != nil {
		return info, took, err
	}
	after, err := e.lab.ReadLinks()
	if err != nil {
		t.Fatal(err)
	}
	moved := uint64(info.RAM.Transferred)
	if d := after.SourceMig.TX - before.SourceMig.TX; d < moved {
		t.Errorf("migration link (source %s) sent %d bytes, less than the %d QEMU transferred", e.lab.SourceMigDev, d, moved)
	}
	if d := after.TargetMig.RX - before.TargetMig.RX; d < moved {
		t.Errorf("migration link (target %s) received %d bytes, less than the %d QEMU transferred", e.lab.TargetMigDev, d, moved)
	}
	for _, m := range []struct {
		name string
		b, a uint64
	}{
		{"source TX", before.SourceMgmt.TX, after.SourceMgmt.TX}, {"source RX", before.SourceMgmt.RX, after.SourceMgmt.RX},
		{"target TX", before.TargetMgmt.TX, after.TargetMgmt.TX}, {"target RX", before.TargetMgmt.RX, after.TargetMgmt.RX},
	} {
		if d := m.a - m.b; d > mgmtQuiet {
			t.Errorf("management link %s carried %d bytes during the migration, want at most %d", m.name, d, mgmtQuiet)
		}
	}
	t.Logf("%s: migration link %d bytes sent / %d received, management link %d/%d/%d/%d bytes (source tx/rx, target tx/rx), QEMU transferred %d",
		f.key, after.SourceMig.TX-before.SourceMig.TX, after.TargetMig.RX-before.TargetMig.RX,
		after.SourceMgmt.TX-before.SourceMgmt.TX, after.SourceMgmt.RX-before.SourceMgmt.RX,
		after.TargetMgmt.TX-before.TargetMgmt.TX, after.TargetMgmt.RX-before.TargetMgmt.RX, moved)
	e.expectMetrics(t, f.key, moved, o.ReturnPath)
	return info, took, nil
}

// expectMetrics waits (5 s at most) until the source proxy's and the target
// proxy's byte counters of key agree, in both directions, then asserts them:
// to_target at least what QEMU transferred, from_target non-zero when the
// destination talks back (return path). A proxy that does not count, counts
// twice or counts one direction only disagrees with the other node.
func (e *env) expectMetrics(t testing.TB, key string, moved uint64, talksBack bool) {
	t.Helper()
	const port = "49152"
	var src, dst map[string]float64
	poll.Until(5*time.Second, func() bool {
		s, err := e.source.Do(node.Request{Op: "bytes", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		d, err := e.target.Do(node.Request{Op: "bytes", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		src, dst = s.Bytes, d.Bytes
		return src["source/to_target/"+port] == dst["target/to_target/"+port] &&
			src["source/from_target/"+port] == dst["target/from_target/"+port]
	})
	t.Logf("%s: proxy metrics: source %v, target %v", key, src, dst)
	for _, dir := range []string{"to_target", "from_target"} {
		if s, d := src["source/"+dir+"/"+port], dst["target/"+dir+"/"+port]; s != d {
			t.Errorf("proxy metric %s: source counted %.0f bytes, target %.0f (source %v, target %v)", dir, s, d, src, dst)
		}
	}
	if got := dst["target/to_target/"+port]; got < float64(moved) {
		t.Errorf("proxy metric to_target = %.0f bytes, want >= %d transferred by QEMU", got, moved)
	}
	if got := dst["target/from_target/"+port]; talksBack && got == 0 {
		t.Errorf("proxy metric from_target = 0 bytes, but the destination talked back (return path)")
	}
}

// expectNoSeries fails unless both nodes have dropped key's metric series.
func (e *env) expectNoSeries(t testing.TB, key string) {
	t.Helper()
	for name, c := range map[string]*node.Client{"source": e.source, "target": e.target} {
		b, err := c.Do(node.Request{Op: "bytes", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Bytes) != 0 {
			t.Errorf("%s node still exports %s's metric series after stop: %v", name, key, b.Bytes)
		}
	}
}

// uniqueKey is a VMI uid of this test alone.
func uniqueKey(t testing.TB, prefix string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s-%x", prefix, b)
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
	return e.prepareOn(t, e.source, e.target, assets, key, o)
}

// prepareOn is prepare with the proxies of the source and target nodes given
// (the bench's upstream pair) and the guest a.
func (e *env) prepareOn(t testing.TB, srcNode, dstNode *node.Client, a *qemu.Assets, key string, o qemu.Options) *flight {
	t.Helper()
	dir, err := os.MkdirTemp("", "vpq")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &flight{key: key, dir: dir}
	f.src, f.dst = e.startGuests(t, dir, a, o)
	r, err := dstNode.Do(node.Request{Op: "start-target", Key: key, Sockets: []string{f.dstSocket()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ports) != 1 {
		t.Fatalf("target ports %v", r.Ports)
	}
	for p := range r.Ports {
		f.targetPort = p
	}
	s, err := srcNode.Do(node.Request{Op: "start-source", Key: key, Addr: e.lab.TargetMig, Ports: r.Ports, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 1 {
		t.Fatalf("source files %v", s.Files)
	}
	f.sourceSock = s.Files[0]
	t.Cleanup(func() {
		_, _ = srcNode.Do(node.Request{Op: "stop", Key: key})
		_, _ = dstNode.Do(node.Request{Op: "stop", Key: key})
	})
	return f
}

// startVMs starts a source VM in the source namespace and an incoming one
// (-incoming defer) in the target namespace, both prepared with o.
func (e *env) startVMs(t testing.TB, dir string, o qemu.Options) (src, dst *qemu.VM) {
	t.Helper()
	return e.startGuests(t, dir, assets, o)
}

// startGuests is startVMs with the guest a.
func (e *env) startGuests(t testing.TB, dir string, a *qemu.Assets, o qemu.Options) (src, dst *qemu.VM) {
	t.Helper()
	dst, err := qemu.Start([]string{"ip", "netns", "exec", e.lab.Target}, dir, "dst", a, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Kill)
	if src, err = qemu.Start([]string{"ip", "netns", "exec", e.lab.Source}, dir, "src", a, false); err != nil {
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
