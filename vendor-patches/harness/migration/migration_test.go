package migration

import (
	"fmt"
	"github.com/migranet/migranet/vendor-patches/harness/poll"
	"net"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
	"github.com/migranet/migranet/vendor-patches/harness/node"
	"github.com/migranet/migranet/vendor-patches/harness/qemu"
)

const fast = 8 << 30 // max-bandwidth: 8 GiB/s, i.e. not the limit

func TestQEMUMigrationThroughProxies(t *testing.T) {
	qemuSuite(t)
	for _, withTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "mTLS"}[withTLS], func(t *testing.T) {
			e := newEnv(t, withTLS)
			gc(t, false, e.source, e.target)
			baseSrc, baseDst := usage(t, e.source), usage(t, e.target)
			key := uniqueKey(t, "vmi-single")
			o := qemu.Options{MaxBytes: fast, Timeout: 30 * time.Second, ReturnPath: true}
			f := e.prepare(t, key, o)

			// Isolation: the target listener is not reachable over the management
			// link (the migration link is probed after the migration).
			if _, err := e.source.Do(node.Request{Op: "dial", Addr: net.JoinHostPort(e.lab.TargetMgmt, f.targetPort)}); err == nil {
				t.Errorf("target listener reachable over the management link at %s:%s", e.lab.TargetMgmt, f.targetPort)
			}
			upSrc, upDst := usage(t, e.source), usage(t, e.target) // listeners up
			ioSrc, ioDst := userBytes(t, e.source), userBytes(t, e.target)
			f.listen(t)
			if withTLS {
				// Strangers are refused by the target proxy itself, and must not
				// spoil the incoming migration (QEMU accepts one connection).
				e.expectStrangersRefused(t, key, net.JoinHostPort(e.lab.TargetMig, f.targetPort))
			}
			info, took, err := e.migrateChecked(t, f, o)
			if err != nil {
				t.Fatalf("migration through the proxies: %v (%+v)", err, info)
			}
			t.Logf("migrated %d MiB in %s, %d dirty syncs", info.RAM.Transferred>>20, took, info.RAM.DirtySyncCount)
			if !withTLS {
				// Plain streams are forwarded in the kernel (splice): what the
				// node processes moved through read/write calls is their command
				// traffic, a few KiB, not the migration's hundreds of MiB.
				for _, n := range []struct {
					name string
					c    *node.Client
					base int64
				}{{"source", e.source, ioSrc}, {"target", e.target, ioDst}} {
					d := userBytes(t, n.c) - n.base
					t.Logf("%s node moved %d bytes through read/write calls during the migration", n.name, d)
					if d > userSpaceSlack {
						t.Errorf("%s proxy copied %d bytes through user space for a %d-byte plain migration, want at most %d (not spliced)",
							n.name, d, info.RAM.Transferred, userSpaceSlack)
					}
				}
			}
			if info.RAM.DirtySyncCount < 2 {
				t.Errorf("dirty-sync-count %d: pre-copy did not iterate", info.RAM.DirtySyncCount)
			}
			// Probed only now: in plain mode any connection the target proxy
			// accepts is forwarded to QEMU, and a probe accepted after QEMU
			// started listening would take the incoming migration's place.
			if _, err := e.source.Do(node.Request{Op: "dial", Addr: net.JoinHostPort(e.lab.TargetMig, f.targetPort)}); err != nil {
				t.Errorf("target listener unreachable over the migration link: %v", err)
			}
			f.src.Kill()
			f.dst.Kill()
			// Every connection of the migration is gone while the listeners
			// still stand, and then the listeners go with stop.
			expectBack(t, "source node after migration, listeners up", e.source, upSrc)
			expectBack(t, "target node after migration, listeners up", e.target, upDst)
			for _, c := range []*node.Client{e.source, e.target} {
				if _, err := c.Do(node.Request{Op: "stop", Key: key}); err != nil {
					t.Fatal(err)
				}
			}
			expectBack(t, "source node after migration", e.source, baseSrc)
			expectBack(t, "target node after migration", e.target, baseDst)
			e.expectNoSeries(t, key)
			gc(t, true, e.source, e.target)
		})
	}
}

// expectStrangersRefused tries every kvproxy.Stranger against the target proxy
// of key at addr and asserts the refusal from the server's side: the target
// proxy logs exactly one refused connection per stranger. The TLS strangers
// must also see the server's alert (kvproxy.PKI.Probe).
func (e *env) expectStrangersRefused(t testing.TB, key, addr string) {
	t.Helper()
	for _, s := range kvproxy.Strangers {
		before := e.refusals(t, key)
		r, err := e.source.Do(node.Request{Op: "tlsdial", Addr: addr, Stranger: string(s)})
		if err != nil {
			t.Errorf("mTLS stranger: %v", err)
			continue
		}
		var n int
		poll.Until(5*time.Second, func() bool { n = e.refusals(t, key); return n >= before+1 })
		t.Logf("mTLS stranger %q refused: server logged the refusal, client saw %q", s, r.Refused)
		if n != before+1 {
			t.Errorf("mTLS stranger %q (client saw %q): the target proxy logged %d refusals, want 1", s, r.Refused, n-before)
		}
	}
}

func (e *env) refusals(t testing.TB, key string) int {
	t.Helper()
	r, err := e.target.Do(node.Request{Op: "refusals", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return r.Refusals
}

// QEMU multifd channels must reach the target in the order they were opened.
func TestQEMUMultifdThroughProxies(t *testing.T) {
	qemuSuite(t)
	const runs = 20
	passed := 0
	for _, withTLS := range []bool{false, true} {
		e := newEnv(t, withTLS)
		for i := 0; i < runs/2; i++ {
			o := qemu.Options{Multifd: 4, MaxBytes: fast, Timeout: 30 * time.Second, ReturnPath: true}
			f := e.prepare(t, uniqueKey(t, fmt.Sprintf("vmi-mfd-%v-%d", withTLS, i)), o)
			f.listen(t)
			info, took, err := e.migrateChecked(t, f, o)
			if err != nil {
				t.Errorf("multifd run %d (tls %v): %v", i, withTLS, err)
			} else {
				passed++
				t.Logf("multifd run %d (tls %v): %d MiB in %s", i, withTLS, info.RAM.Transferred>>20, took)
			}
			f.src.Kill()
			f.dst.Kill()
		}
	}
	t.Logf("multifd through the proxies: %d of %d runs completed", passed, runs)
	if passed != runs {
		t.Errorf("multifd: %d of %d runs completed, want all", passed, runs)
	}
}

// A migration aborted mid-stream, by a killed source QEMU or by QMP
// migrate_cancel, must leave no connection (fd) or proxy goroutine on either
// node; after a cancel the source guest runs on.
func TestQEMUMigrationAborted(t *testing.T) {
	qemuSuite(t)
	for _, abort := range []string{"killed", "cancelled"} {
		for _, withTLS := range []bool{false, true} {
			t.Run(abort+"/"+map[bool]string{false: "plain", true: "mTLS"}[withTLS], func(t *testing.T) {
				e := newEnv(t, withTLS)
				o := qemu.Options{MaxBytes: 32 << 20, Timeout: 30 * time.Second, ReturnPath: true}
				key := uniqueKey(t, "vmi-"+abort)
				f := e.prepare(t, key, o)
				f.listen(t)
				gc(t, false, e.source, e.target)
				baseSrc, baseDst := usage(t, e.source), usage(t, e.target)
				if err := f.src.QMP.Do("migrate", map[string]any{"uri": "unix:" + f.sourceSock}, nil); err != nil {
					t.Fatal(err)
				}
				// Mid-stream: the proxies have carried some MiB, far from all.
				st, err := qemu.WaitTransferred(f.src.QMP, 4<<20, 10*time.Second)
				if err != nil || st.Status != "active" {
					t.Fatalf("migration not in flight before the abort: %q %v", st.Status, err)
				}
				if abort == "killed" {
					f.src.Kill()
				} else {
					if err := f.src.QMP.Do("migrate_cancel", nil, nil); err != nil {
						t.Fatal(err)
					}
					// QEMU ends a cancelled migration "cancelled", or "failed" when the stream's
					// error (the channel the cancel shuts down) wins the race with the state change;
					// either way the source must go on running and nothing may be left behind.
					info, err := qemu.WaitMigration(f.src.QMP, 10*time.Second)
					if info.Status != "cancelled" && info.Status != "failed" {
						t.Fatalf("after migrate_cancel: status %q (%v), want cancelled (or failed)", info.Status, err)
					}
					t.Logf("after migrate_cancel: status %q", info.Status)
					if err := qemu.WaitStatus(f.src.QMP, "running", 10*time.Second); err != nil {
						t.Errorf("source guest after the cancel: %v", err)
					}
				}
				expectBack(t, "source node after the abort", e.source, baseSrc)
				expectBack(t, "target node after the abort", e.target, baseDst)
				for _, c := range []*node.Client{e.source, e.target} {
					if _, err := c.Do(node.Request{Op: "stop", Key: key}); err != nil {
						t.Fatal(err)
					}
				}
				e.expectNoSeries(t, key)
				gc(t, true, e.source, e.target)
			})
		}
	}
}

// userSpaceSlack bounds what a node may move through read/write calls during a
// plain migration: its own command traffic (JSON lines, refusal probes).
const userSpaceSlack = 1 << 20

// userBytes is what node c has moved through read/write-type calls so far.
func userBytes(t testing.TB, c *node.Client) int64 {
	t.Helper()
	r, err := c.Do(node.Request{Op: "io"})
	if err != nil {
		t.Fatal(err)
	}
	return r.UserBytes
}
