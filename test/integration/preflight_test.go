package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// preflightOut is `migranet preflight -o json`'s answer and exit code.
type preflightOut struct {
	migrationcheck.PreflightResult
	User string `json:"user"`
	Exit int    `json:"-"`
}

func migranetPreflight(ctx context.Context, args ...string) preflightOut {
	cmd := exec.CommandContext(ctx, f.Manager.Binary, append([]string{"preflight", "--kubeconfig", f.Kubeconfig, "-o", "json"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var p preflightOut
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		p.Exit = exit.ExitCode()
	} else {
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
	}
	ExpectWithOffset(1, p.Exit).To(BeNumerically("<", 2), "preflight failed: %s", errOut.String())
	ExpectWithOffset(1, json.Unmarshal(out.Bytes(), &p)).To(Succeed(), "preflight's output: %s", out.String())
	return p
}

// warningCollector collects the warnings the API server returns.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningCollector) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// dryRunVerdict asks the API server (and through it migranet's webhook) to create a migration of
// vmi without storing it, and returns the refusal (nil when admitted) and the warnings.
func dryRunVerdict(ctx context.Context, c client.Client, w *warningCollector, ns, name, vmi string, added map[string]string) (error, []string) {
	w.take()
	err := c.Create(ctx, framework.VMIM(ns, name, vmi, added), client.DryRunAll)
	return err, w.take()
}

// generatedState is one cluster state the comparison visits.
type generatedState struct {
	modes  map[settings.Rule]settings.Mode
	exempt bool
	zones  map[string]string // node → zone label ("" = none)
	cordon map[string]bool
	vmi    string
	target map[string]string
}

func (s generatedState) String() string {
	return fmt.Sprintf("modes %v exempt=%v zones %v cordoned %v vmi %s target %v", s.modes, s.exempt, s.zones, s.cordon, s.vmi, s.target)
}

func generateState(r *rand.Rand, nodes []string) generatedState {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	s := generatedState{modes: map[settings.Rule]settings.Mode{}, exempt: r.IntN(4) == 0, zones: map[string]string{}, cordon: map[string]bool{}}
	for _, rule := range []settings.Rule{settings.RuleKubeVirtReady, settings.RuleNetworkReady, settings.RuleFeasibleTarget, settings.RuleVMIState} {
		s.modes[rule] = settings.Mode(pick("enforce", "enforce", "warn", "off"))
	}
	for _, n := range nodes {
		s.zones[n] = pick("a", "b", "")
		s.cordon[n] = r.IntN(4) == 0
	}
	s.vmi = pick("vm-free", "vm-pinned", "vm-zone", "vm-busy", "vm-missing")
	if z := pick("a", "b", "", ""); z != "" {
		s.target = map[string]string{"zone": z}
	}
	return s
}

func policyValue(s generatedState, user string) string {
	v := map[string]any{"rules": s.modes}
	if s.exempt {
		v["exemptUsers"] = []string{user}
	}
	b, err := json.Marshal(v)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(b)
}

func applyState(ctx context.Context, s generatedState, user string) {
	p := &v1beta1.Setting{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, p)).To(Succeed())
	patch := client.MergeFrom(p.DeepCopy())
	p.Value = policyValue(s, user)
	Expect(f.Client.Patch(ctx, p, patch)).To(Succeed())
	for name, zone := range s.zones {
		n := &corev1.Node{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		delete(n.Labels, "zone")
		if zone != "" {
			n.Labels["zone"] = zone
		}
		n.Spec.Unschedulable = s.cordon[name]
		Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
	}
}

var _ = Describe("migranet preflight", func() {
	It("gives the webhook's verdict (a server-side dry run) across generated cluster states", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		nodes := []string{"node-1", "node-2", "node-3"}
		DeferCleanup(func(ctx context.Context) {
			applyState(ctx, generatedState{zones: map[string]string{"node-1": "", "node-2": "", "node-3": ""}, cordon: map[string]bool{}}, "")
			p := &v1beta1.Setting{}
			Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, p)).To(Succeed())
			patch := client.MergeFrom(p.DeepCopy())
			p.Value = ""
			Expect(f.Client.Patch(ctx, p, patch)).To(Succeed())
		})
		// An earlier spec (any order) may have left virt-handlers rolling: the in-flight migration
		// below needs KubeVirt Available, or migranet's kubevirtReady refuses it.
		Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
		review := &authenticationv1.SelfSubjectReview{}
		Expect(f.Client.Create(ctx, review)).To(Succeed())
		user := review.Status.UserInfo.Username

		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-free", "node-1", nil))).To(Succeed())
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-pinned", "node-1", map[string]string{"kubernetes.io/hostname": "node-1"}))).To(Succeed())
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-zone", "node-2", map[string]string{"zone": "a"}))).To(Succeed())
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-busy", "node-3", nil))).To(Succeed())
		f.CreateVMIM(ctx, framework.VMIM(ns, "in-flight", "vm-busy", nil))

		warnings := &warningCollector{}
		cfg := rest.CopyConfig(f.Config)
		cfg.WarningHandler = warnings
		c, err := client.New(cfg, client.Options{Scheme: f.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		const states = 30
		r := rand.New(rand.NewPCG(16, 2026))
		admitted, refused, warned, retried := 0, 0, 0, 0
		for i := range states {
			s := generateState(r, nodes)
			applyState(ctx, s, user)
			attempts := 0
			// The webhook reads informer caches, which follow the API server by milliseconds: wait
			// until it has caught up with the state just written, then they must agree.
			Eventually(func(g Gomega) {
				attempts++
				args := []string{"-n", ns, s.vmi}
				if s.target != nil {
					args = append(args, "--target-selector", "zone="+s.target["zone"])
				}
				p := migranetPreflight(ctx, args...)
				refusal, ws := dryRunVerdict(ctx, c, warnings, ns, fmt.Sprintf("probe-%d", i), s.vmi, s.target)
				g.Expect(p.User).To(Equal(user))
				g.Expect(p.Admitted).To(Equal(refusal == nil), "preflight %+v, webhook %v", p.PreflightResult, refusal)
				g.Expect(p.Exit).To(Equal(map[bool]int{true: 0, false: 1}[p.Admitted]))
				slices.Sort(ws)
				want := slices.Clone(p.Warnings)
				slices.Sort(want)
				g.Expect(ws).To(Equal(want), "warnings")
				fails := 0
				for _, rv := range p.Rules {
					if rv.Verdict == migrationcheck.VerdictFail {
						fails++
						g.Expect(refusal.Error()).To(ContainSubstring(rv.Message))
					}
				}
				if refusal != nil {
					g.Expect(strings.Count(refusal.Error(), "Forbidden: migranet ")).To(Equal(fails), "refused by rules preflight did not fail: %v", refusal)
				}
				switch {
				case refusal != nil:
					refused++
				case len(ws) > 0:
					warned++
				default:
					admitted++
				}
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed(), "state %d: %s", i, s)
			if attempts > 1 {
				retried++
			}
		}
		fmt.Fprintf(GinkgoWriter, "preflight vs webhook: %d states, %d admitted, %d with warnings, %d refused; %d waited for the webhook's caches\n",
			states, admitted, warned, refused, retried)
		// The generator must reach every kind of answer, or the comparison proves little.
		Expect([]int{admitted, warned, refused}).NotTo(ContainElement(0))
	})
})

var _ = Describe("a migration admitted with warnings", func() {
	It("shows its warnings in migranet status, and kubectl migranet preflight and status run as a plugin, naming themselves so", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		p := &v1beta1.Setting{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, p)).To(Succeed())
		patch := client.MergeFrom(p.DeepCopy())
		p.Value = `{"rules":{"feasibleTarget":"warn"}}`
		Expect(f.Client.Patch(ctx, p, patch)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, p)).To(Succeed())
			patch := client.MergeFrom(p.DeepCopy())
			p.Value = ""
			Expect(f.Client.Patch(ctx, p, patch)).To(Succeed())
		})
		Expect(f.Client.Create(ctx, framework.VMI(ns, "pinned", "node-1", map[string]string{"kubernetes.io/hostname": "node-1"}))).To(Succeed())

		// As a kubectl plugin: kubectl finds kubectl-migranet on PATH.
		bin := GinkgoT().TempDir()
		Expect(os.Symlink(f.Manager.Binary, filepath.Join(bin, "kubectl-migranet"))).To(Succeed())
		var stdout string
		Eventually(func(g Gomega) {
			// kubectl finds a plugin only when its name comes before any flag.
			cmd := exec.CommandContext(ctx, f.Binaries.Kubectl, "migranet", "preflight", "-n", ns, "pinned")
			cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.Output()
			g.Expect(err).NotTo(HaveOccurred(), "kubectl migranet preflight: %s", out)
			stdout = string(out)
			g.Expect(stdout).To(ContainSubstring("ADMITTED with 1 warning"))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		Expect(stdout).To(MatchRegexp(`feasibleTarget\s+warn\s+migranet feasibleTarget: no node can receive`))
		Expect(stdout).To(MatchRegexp(`node-1\s+no\s+is its source node node-1`))

		f.CreateVMIM(ctx, framework.VMIM(ns, "warned", "pinned", nil))
		Eventually(func(g Gomega) {
			code, out, errOut := migranetStatus(ctx, "-n", ns)
			g.Expect(code).To(Equal(0), errOut)
			g.Expect(out).To(ContainSubstring("Warning: warned was admitted with: migranet feasibleTarget: no node can receive"))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())

		By("kubectl migranet status, and a usage error that names the command as typed")
		plugin := func(args ...string) (string, string, error) {
			cmd := exec.CommandContext(ctx, f.Binaries.Kubectl, append([]string{"migranet"}, args...)...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			return out.String(), errOut.String(), err
		}
		out, errOut, err := plugin("status", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), "kubectl migranet status: %s", errOut)
		Expect(out).To(ContainSubstring("Warning: warned was admitted with: migranet feasibleTarget: no node can receive"))
		_, errOut, err = plugin("preflight", "-n", ns)
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring("kubectl migranet preflight: missing the VMI"))
		Expect(errOut).To(ContainSubstring("e.g. kubectl migranet preflight -n NAMESPACE VMI\nRun 'kubectl migranet preflight -h'"))
	})
})
