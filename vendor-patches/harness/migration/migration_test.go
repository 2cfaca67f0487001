package migration

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/node"
	"github.com/migranet/migranet/vendor-patches/harness/qemu"
)

const fast = 8 << 30 // max-bandwidth: 8 GiB/s, i.e. not the limit

func TestQEMUMigrationThroughProxies(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "mTLS"}[withTLS], func(t *testing.T) {
			e := newEnv(t, withTLS)
			baseSrc, baseDst := usage(t, e.source), usage(t, e.target)
			o := qemu.Options{MaxBytes: fast, Timeout: 30 * time.Second}
			f := e.prepare(t, "vmi-single", o)

			// Isolation: the target listener is not reachable over the management
			// link (the migration link is probed after the migration).
			if _, err := e.source.Do(node.Request{Op: "dial", Addr: net.JoinHostPort(e.lab.TargetMgmt, f.targetPort)}); err == nil {
				t.Errorf("target listener reachable over the management link at %s:%s", e.lab.TargetMgmt, f.targetPort)
			}
			f.listen(t)
			if withTLS {
				// Strangers are refused, and must not spoil the incoming migration.
				for _, r := range []node.Request{
					{Op: "tlsdial", Addr: net.JoinHostPort(e.lab.TargetMig, f.targetPort), ClientCN: "kubevirt.io:system:client:intruder"},
					{Op: "tlsdial", Addr: net.JoinHostPort(e.lab.TargetMig, f.targetPort), ClientCN: "kubevirt.io:system:client:virt-handler", Foreign: true},
				} {
					if _, err := e.source.Do(r); err == nil {
						t.Errorf("mTLS let in a client (cn %s, foreign CA %v)", r.ClientCN, r.Foreign)
					}
				}
			}
			info, took, err := f.migrate(o)
			if err != nil {
				t.Fatalf("migration through the proxies: %v (%+v)", err, info)
			}
			t.Logf("migrated %d MiB in %s, %d dirty syncs", info.RAM.Transferred>>20, took, info.RAM.DirtySyncCount)
			if info.RAM.DirtySyncCount < 2 {
				t.Errorf("dirty-sync-count %d: pre-copy did not iterate", info.RAM.DirtySyncCount)
			}
			b, err := e.target.Do(node.Request{Op: "bytes", Key: "vmi-single"})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Bytes["target/to_target/49152"]; got < float64(info.RAM.Transferred) {
				t.Errorf("target proxy metric to_target = %.0f bytes, want >= %d transferred by QEMU", got, info.RAM.Transferred)
			}
			// Probed only now: in plain mode any connection the target proxy
			// accepts is forwarded to QEMU, and a probe accepted after QEMU
			// started listening would take the incoming migration's place.
			if _, err := e.source.Do(node.Request{Op: "dial", Addr: net.JoinHostPort(e.lab.TargetMig, f.targetPort)}); err != nil {
				t.Errorf("target listener unreachable over the migration link: %v", err)
			}
			f.src.Kill()
			f.dst.Kill()
			for _, c := range []*node.Client{e.source, e.target} {
				if _, err := c.Do(node.Request{Op: "stop", Key: "vmi-single"}); err != nil {
					t.Fatal(err)
				}
			}
			expectBack(t, "source node after migration", e.source, baseSrc)
			expectBack(t, "target node after migration", e.target, baseDst)
		})
	}
}

// QEMU multifd channels must reach the target in the order they were opened.
func TestQEMUMultifdThroughProxies(t *testing.T) {
	const runs = 20
	passed := 0
	for _, withTLS := range []bool{false, true} {
		e := newEnv(t, withTLS)
		for i := 0; i < runs/2; i++ {
			o := qemu.Options{Multifd: 4, MaxBytes: fast, Timeout: 30 * time.Second}
			f := e.prepare(t, fmt.Sprintf("vmi-mfd-%v-%d", withTLS, i), o)
			f.listen(t)
			info, took, err := f.migrate(o)
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

// Killing the source QEMU mid-stream must leave no fd or goroutine on either node.
func TestQEMUPeerKilledMidMigration(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "mTLS"}[withTLS], func(t *testing.T) {
			e := newEnv(t, withTLS)
			o := qemu.Options{MaxBytes: 32 << 20, Timeout: 30 * time.Second}
			f := e.prepare(t, "vmi-killed", o)
			f.listen(t)
			baseSrc, baseDst := usage(t, e.source), usage(t, e.target)
			if err := f.src.QMP.Do("migrate", map[string]any{"uri": "unix:" + f.sourceSock}, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond)
			var st qemu.MigrationInfo
			if err := f.src.QMP.Do("query-migrate", nil, &st); err != nil || st.Status != "active" {
				t.Fatalf("migration not in flight before the kill: %q %v", st.Status, err)
			}
			f.src.Kill()
			expectBack(t, "source node after the source QEMU died", e.source, baseSrc)
			expectBack(t, "target node after the source QEMU died", e.target, baseDst)
		})
	}
}
