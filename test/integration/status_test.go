package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/test/framework"
)

// migranetStatus runs the suite's migranet binary `status` with args against the suite's cluster
// (admin kubeconfig unless args name another) and returns its exit code, stdout and stderr.
func migranetStatus(ctx context.Context, args ...string) (int, string, string) {
	if !containsArg(args, "--kubeconfig") {
		args = append([]string{"--kubeconfig", f.Kubeconfig}, args...)
	}
	cmd := exec.CommandContext(ctx, f.Manager.Binary, append([]string{"status"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return 0, out.String(), errOut.String()
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// follower is a running `migranet status -w`.
type follower struct {
	cmd   *exec.Cmd
	lines chan string
}

// follow starts `migranet status -w` with args and stops it (SIGINT) when the test ends.
func follow(args ...string) *follower {
	cmd := exec.Command(f.Manager.Binary, append([]string{"status", "--kubeconfig", f.Kubeconfig, "-w"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	cmd.Stderr = GinkgoWriter
	ExpectWithOffset(1, cmd.Start()).To(Succeed())
	w := &follower{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(GinkgoWriter, "status -w:", sc.Text())
			w.lines <- sc.Text()
		}
	}()
	DeferCleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return w
}

// next returns the follower's next line, failing after framework.Short.
func (w *follower) next() string {
	select {
	case l, ok := <-w.lines:
		ExpectWithOffset(1, ok).To(BeTrue(), "migranet status -w ended early")
		return l
	case <-time.After(framework.Short):
		Fail("no line from migranet status -w within " + framework.Short.String())
		return ""
	}
}

// until reads lines until one matches re, and returns it.
func (w *follower) until(re string) string {
	pattern := regexp.MustCompile(re)
	deadline := time.Now().Add(framework.Short)
	var seen []string
	for time.Now().Before(deadline) {
		select {
		case l, ok := <-w.lines:
			if !ok {
				Fail("migranet status -w ended; lines seen: " + strings.Join(seen, "\n"))
			}
			if pattern.MatchString(l) {
				return l
			}
			seen = append(seen, l)
		case <-time.After(time.Until(deadline)):
		}
	}
	Fail("no line matching " + re + "; lines seen:\n" + strings.Join(seen, "\n"))
	return ""
}

// interrupt sends Ctrl-C and returns the exit code.
func (w *follower) interrupt() int {
	Expect(w.cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	done := make(chan error, 1)
	go func() {
		for range w.lines { //nolint:revive // drain until the process closes stdout
		}
		done <- w.cmd.Wait()
	}()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		Expect(err).NotTo(HaveOccurred())
		return 0
	case <-time.After(framework.Short):
		Fail("migranet status -w did not stop on SIGINT")
		return -1
	}
}

// The suite's KubeVirt is simulated (see suite_test.go): nothing drives migrations, so these
// specs write the statuses KubeVirt's virt-controller and virt-handler would, and check what
// migranet status makes of them.

// migrationState is a migration state of vmim, as virt-handler would write it on the VMI, started
// 75 s ago.
func migrationState(vmim *kubevirtv1.VirtualMachineInstanceMigration, from, to string) *kubevirtv1.VirtualMachineInstanceMigrationState {
	start := metav1.NewTime(time.Now().Add(-75 * time.Second))
	return &kubevirtv1.VirtualMachineInstanceMigrationState{
		MigrationUID: vmim.UID, SourceNode: from, TargetNode: to, StartTimestamp: &start,
		Mode: kubevirtv1.MigrationPreCopy, MigrationNetworkType: kubevirtv1.Migration,
	}
}

// elapsedCell is the one cell of a status row that reads as a duration ("75s", "2m3s").
func elapsedCell(row string) string {
	var cells []string
	for _, c := range strings.Fields(row) {
		if regexp.MustCompile(`^\d+(s|m|m\d+s)$`).MatchString(c) {
			cells = append(cells, c)
		}
	}
	ExpectWithOffset(1, cells).To(HaveLen(1), "one duration cell in %q", row)
	return cells[0]
}

// humanDurations spells every whole second from lo to hi as kubectl's columns do.
func humanDurations(lo, hi int) []string {
	var out []string
	for s := lo; s <= hi; s++ {
		out = append(out, duration.HumanDuration(time.Duration(s)*time.Second))
	}
	return out
}

func setVMIState(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, st *kubevirtv1.VirtualMachineInstanceMigrationState) {
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKeyFromObject(vmi), vmi)).To(Succeed())
	vmi.Status.MigrationState = st
	ExpectWithOffset(1, f.Client.Update(ctx, vmi)).To(Succeed()) // the VMI CRD has no status subresource
}

func setVMIMStatus(ctx context.Context, vmim *kubevirtv1.VirtualMachineInstanceMigration, status kubevirtv1.VirtualMachineInstanceMigrationStatus) {
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKeyFromObject(vmim), vmim)).To(Succeed())
	vmim.Status = status
	ExpectWithOffset(1, f.Client.Status().Update(ctx, vmim)).To(Succeed())
}

// statusRow matches a table row: cells separated by runs of spaces; "*" matches any one cell
// without spaces (ELAPSED).
func statusRow(cells ...string) string {
	quoted := make([]string, len(cells))
	for i, c := range cells {
		if c == "*" {
			quoted[i] = `\S+`
			continue
		}
		quoted[i] = regexp.QuoteMeta(c)
	}
	return "^" + strings.Join(quoted, `\s+`) + "$"
}

var titles = statusRow("NAME", "VMI", "NODES", "PHASE", "MODE", "NETWORK", "ELAPSED", "STATE")

const podNetworkHeader = "Migration network: none (pod network): Ready"

var _ = Describe("migranet status", func() {
	// A fixed start and end: the failed migration's ELAPSED is exactly 42s.
	failedStart := metav1.NewTime(time.Now().Add(-10 * time.Minute).Truncate(time.Second))
	failedEnd := metav1.NewTime(failedStart.Add(42 * time.Second))
	const failure = "Live migration failed: connection to node-3:49152 refused"
	// When populate wrote move-vm1's start (75 s before then): its ELAPSED is at least 75 s and at
	// most 75 s plus the time since, whatever the machine's speed.
	var startWritten time.Time

	// populate creates, in a new namespace, a running post-copy migration (move-vm1), a failed
	// one (move-vm2) and one whose VMI is gone (move-vm3).
	populate := func(ctx context.Context) string {
		// A previous spec's reset may still be rolling virt-handlers: migranet refuses migrations
		// until KubeVirt and the network are ready again.
		waitReady(ctx, netcontroller.ReasonPodNetwork)
		ns := f.Namespace(ctx)
		vm1, vm2, vm3 := framework.VMI(ns, "vm1", "node-1", nil), framework.VMI(ns, "vm2", "node-2", nil), framework.VMI(ns, "vm3", "node-3", nil)
		for _, vmi := range []*kubevirtv1.VirtualMachineInstance{vm1, vm2, vm3} {
			Expect(f.Client.Create(ctx, vmi)).To(Succeed())
		}
		m1, m2, m3 := framework.VMIM(ns, "move-vm1", "vm1", nil), framework.VMIM(ns, "move-vm2", "vm2", nil), framework.VMIM(ns, "move-vm3", "vm3", nil)
		for _, m := range []*kubevirtv1.VirtualMachineInstanceMigration{m1, m2, m3} {
			f.CreateVMIM(ctx, m)
			// Rows are ordered by creation time, which the API server keeps in whole seconds:
			// the next one is created in a later second.
			Eventually(func() time.Time { return time.Now().Truncate(time.Second) }).
				WithTimeout(framework.Short).Should(BeTemporally(">", m.CreationTimestamp.Time))
		}
		startWritten = time.Now()
		st := migrationState(m1, "node-1", "node-2")
		st.Mode = kubevirtv1.MigrationPostCopy
		setVMIState(ctx, vm1, st)
		setVMIMStatus(ctx, m1, kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning})
		failed := migrationState(m2, "node-2", "node-3")
		failed.StartTimestamp, failed.EndTimestamp, failed.Failed, failed.FailureReason = &failedStart, &failedEnd, true, failure
		setVMIMStatus(ctx, m2, kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationFailed, MigrationState: failed})
		Expect(f.Client.Delete(ctx, vm3)).To(Succeed())
		return ns
	}

	It("lists a namespace's migrations with their combined state, as a table and as JSON", func(ctx context.Context) {
		ns := populate(ctx)

		code, stdout, stderr := migranetStatus(ctx, "-n", ns)
		Expect(code).To(Equal(0), stderr)
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		Expect(lines).To(HaveLen(5), stdout)
		Expect(lines[0]).To(Equal(podNetworkHeader))
		Expect(lines[1]).To(MatchRegexp(titles))
		// In flight first, by creation; then the finished one.
		Expect(lines[2]).To(MatchRegexp(statusRow("move-vm1", "vm1", "node-1 → node-2", "Running", "post-copy", "migration", "*", "post-copy")))
		Expect(lines[3]).To(MatchRegexp(statusRow("move-vm3", "vm3", "<none>", "<none>", "<none>", "<none>", "*",
			"vmi missing: VirtualMachineInstance vm3 not found")))
		Expect(lines[4]).To(MatchRegexp(statusRow("move-vm2", "vm2", "node-2 → node-3", "Failed", "pre-copy", "migration", "42s", "failed: "+failure)))
		Expect(elapsedCell(lines[2])).To(BeElementOf(humanDurations(75, 75+1+int(time.Since(startWritten).Seconds()))),
			"ELAPSED of move-vm1 counts from its start, 75 s before populate wrote it")

		code, stdout, stderr = migranetStatus(ctx, "-n", ns, "-o", "json")
		Expect(code).To(Equal(0), stderr)
		var doc struct {
			Network struct {
				Mode, Ready, Reason string
			}
			Migrations []struct {
				Namespace, Name, VMI, SourceNode, TargetNode, Phase, Mode, Network, NetworkSource, State, Reason string
				VMIFound, InFlight                                                                               bool
				ElapsedSeconds                                                                                   *int64
			}
		}
		Expect(json.Unmarshal([]byte(stdout), &doc)).To(Succeed(), stdout)
		Expect([]string{doc.Network.Mode, doc.Network.Ready}).To(Equal([]string{"pod", "True"}))
		Expect(doc.Migrations).To(HaveLen(3))
		m := doc.Migrations[0]
		Expect([]string{m.Namespace, m.Name, m.VMI, m.SourceNode, m.TargetNode, m.Phase, m.Mode, m.Network, m.NetworkSource, m.State}).
			To(Equal([]string{ns, "move-vm1", "vm1", "node-1", "node-2", "Running", "PostCopy", "Migration", "reported", "post-copy"}))
		Expect(m.InFlight && m.VMIFound).To(BeTrue())
		Expect([]string{doc.Migrations[1].Name, doc.Migrations[1].State}).To(Equal([]string{"move-vm3", "vmi missing"}))
		Expect(doc.Migrations[1].VMIFound).To(BeFalse())
		m = doc.Migrations[2]
		Expect([]string{m.Name, m.State, m.Reason}).To(Equal([]string{"move-vm2", "failed", failure}))
		Expect(m.InFlight).To(BeFalse())
		Expect(m.ElapsedSeconds).To(HaveValue(BeEquivalentTo(42)))

		// -A adds the namespace column and reaches beyond the context's namespace.
		code, stdout, stderr = migranetStatus(ctx, "-A")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(MatchRegexp(`(?m)^NAMESPACE\s+NAME\s+VMI\s`))
		Expect(stdout).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(ns) + `\s+move-vm1\s+vm1\s`))

		// An empty namespace: the header, and kubectl's note on stderr.
		empty := f.Namespace(ctx)
		code, stdout, stderr = migranetStatus(ctx, "-n", empty)
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(Equal(podNetworkHeader + "\n"))
		Expect(stderr).To(ContainSubstring("No migrations found in namespace " + empty))
	})

	It("needs read access to migrations and VMIs, and says so; the Setting is optional", func(ctx context.Context) {
		ns := populate(ctx)
		kubeconfig, err := f.WriteKubeconfig("status-viewer", "status-viewer")
		Expect(err).NotTo(HaveOccurred())

		code, _, stderr := migranetStatus(ctx, "--kubeconfig", kubeconfig, "-n", ns)
		Expect(code).To(Equal(1))
		Expect(stderr).To(ContainSubstring("forbidden"))
		Expect(stderr).To(ContainSubstring("needs get, list and watch on virtualmachineinstancemigrations and virtualmachineinstances"))

		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migration-viewer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{kubevirtv1.SchemeGroupVersion.Group}, Verbs: []string{"get", "list", "watch"},
				Resources: []string{"virtualmachineinstancemigrations", "virtualmachineinstances"}}},
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migration-viewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "status-viewer"}},
		}
		Expect(f.Client.Create(ctx, role)).To(Succeed())
		Expect(f.Client.Create(ctx, binding)).To(Succeed())
		Eventually(func(g Gomega) {
			code, stdout, stderr := migranetStatus(ctx, "--kubeconfig", kubeconfig, "-n", ns)
			g.Expect(code).To(Equal(0), stderr)
			g.Expect(stdout).To(HavePrefix("Migration network: unknown: Unknown (Forbidden: "))
			g.Expect(stdout).To(MatchRegexp(`(?m)^move-vm1\s+vm1\s+node-1 → node-2\s+Running\s+post-copy\s`))
		}).WithTimeout(framework.Short).Should(Succeed())
	})

	It("follows changes with -w, one line per change, in table and JSON form, until Ctrl-C", func(ctx context.Context) {
		waitReady(ctx, netcontroller.ReasonPodNetwork)
		ns := f.Namespace(ctx)
		vmi := framework.VMI(ns, "vm1", "node-1", nil)
		Expect(f.Client.Create(ctx, vmi)).To(Succeed())
		vmim := framework.VMIM(ns, "move-vm1", "vm1", nil)
		f.CreateVMIM(ctx, vmim)

		table := follow("-n", ns)
		jsonLines := follow("-n", ns, "-o", "json")
		Expect(table.next()).To(Equal(podNetworkHeader))
		Expect(table.next()).To(MatchRegexp(titles))
		Expect(table.next()).To(MatchRegexp(statusRow("move-vm1", "vm1", "node-1 → ?", "<none>", "<none>", "<none>", "*", "pending")))
		Expect(jsonLines.next()).To(HavePrefix(`{"type":"network","network":{"setting":"vm-migration-network","mode":"pod"`))
		Expect(jsonLines.next()).To(And(HavePrefix(`{"type":"migration","migration":{"namespace":"`+ns+`","name":"move-vm1"`),
			ContainSubstring(`"state":"pending"`)))

		// Each change is one new row; nothing is printed for ELAPSED alone.
		setVMIMStatus(ctx, vmim, kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationScheduling})
		Expect(table.next()).To(MatchRegexp(statusRow("move-vm1", "vm1", "node-1 → ?", "Scheduling", "<none>", "<none>", "*", "scheduling")))

		st := migrationState(vmim, "node-1", "node-2")
		st.MigrationNetworkType = "" // as KubeVirt v1.9 leaves it: judged from the target's address
		st.TargetNodeAddress = "10.244.0.7"
		setVMIState(ctx, vmi, st)
		setVMIMStatus(ctx, vmim, kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning})
		table.until(statusRow("move-vm1", "vm1", "node-1 → node-2", "Running", "pre-copy", "pod", "*", "migrating"))

		// The source reports completion before the controller moves the phase: an interim row.
		end := metav1.Now()
		st.Completed, st.EndTimestamp = true, &end
		setVMIState(ctx, vmi, st)
		table.until(statusRow("move-vm1", "vm1", "node-1 → node-2", "Running", "pre-copy", "pod", "*", "completing: waiting for the target"))
		setVMIMStatus(ctx, vmim, kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationSucceeded})
		table.until(statusRow("move-vm1", "vm1", "node-1 → node-2", "Succeeded", "pre-copy", "<none>", "*", "completed"))
		jsonLines.until(`"phase":"Succeeded".*"state":"completed"`)

		Expect(f.Client.Delete(ctx, vmim)).To(Succeed())
		table.until(statusRow("move-vm1", "vm1", "node-1 → node-2", "Succeeded", "pre-copy", "<none>", "*", "deleted"))
		jsonLines.until(`"state":"deleted"`)

		Expect(table.interrupt()).To(Equal(0))
		Expect(jsonLines.interrupt()).To(Equal(0))
	})
})
