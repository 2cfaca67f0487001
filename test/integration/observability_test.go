package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	settingscontroller "github.com/migranet/migranet/settings/controller"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/webhook"
)

// vmiEvents lists "<reason>: <message>" of the events on the object name in namespace ns.
func vmiEvents(ctx context.Context, ns, name string) []string {
	list, err := f.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// settingEvents lists "<type> <reason>: <message>" of the events on the vm-migration-network
// Setting last seen at or after since (a cluster-scoped object's events live in "default").
func settingEvents(ctx context.Context, since time.Time) []string {
	list, err := f.Clientset.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Setting,involvedObject.name=" + v1beta1.MigrationNetwork})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []string
	for _, e := range list.Items {
		if !e.LastTimestamp.Time.Before(since.Truncate(time.Second)) {
			out = append(out, e.Type+" "+e.Reason+": "+e.Message)
		}
	}
	return out
}

// settingsTable runs `kubectl get settings.migranet.io` and returns its header and, per setting,
// its columns, split at the header's column starts (a value summary holds spaces).
func settingsTable() ([]string, map[string][]string) {
	out, stderr, err := f.Kubectl("", "get", "settings.migranet.io")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), stderr)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	cols := func(line string) []string {
		var cells []string
		for k, s := range starts {
			end := len(line)
			if k+1 < len(starts) {
				end = min(starts[k+1], len(line))
			}
			cell := ""
			if s < len(line) {
				cell = strings.TrimSpace(line[s:end])
			}
			cells = append(cells, cell)
		}
		return cells
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		c := cols(l)
		rows[c[0]] = c
	}
	return cols(header), rows
}

// scraper is a ServiceAccount allowed GET /metrics through the metrics-reader ClusterRole, as
// Prometheus is given in a real install.
type scraper struct{ token string }

func newScraper(ctx context.Context) *scraper {
	ns := f.Namespace(ctx)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	ExpectWithOffset(1, f.Client.Create(ctx, sa)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "observability-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "migranet-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	ExpectWithOffset(1, f.Client.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, binding))).To(Succeed()) })
	tr, err := f.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return &scraper{token: tr.Status.Token}
}

// scrape reads every running replica's metrics endpoint and returns the samples by series, summed
// over the replicas (counters are per replica, the gauges come from the leader alone), each series
// written as the exposition format does: name{label="value",...} with labels sorted by name.
func (s *scraper) scrape(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	for _, r := range f.Replicas {
		if r.PID() == 0 {
			continue
		}
		if err := s.scrapeOne(ctx, r.MetricsURL(), out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *scraper) scrapeOne(ctx context.Context, url string, out map[string]float64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	// controller-runtime serves metrics with a self-signed certificate when given none.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, see above
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET /metrics: %s: %s", resp.Status, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return fmt.Errorf("sample %q: %w", line, err)
		}
		out[line[:i]] += v
	}
	return sc.Err()
}

// series writes a series key as scrape returns it.
func series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

var _ = Describe("observability", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	It("shows the value summary, Configured and Ready in kubectl get settings.migranet.io", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		header, rows := settingsTable()
		Expect(header).To(Equal([]string{"NAME", "VALUE", "CONFIGURED", "READY", "AGE"}))
		Expect(rows).To(HaveKey(v1beta1.MigrationNetwork))
		row := rows[v1beta1.MigrationNetwork]
		Expect(row[1:4]).To(Equal([]string{"migration vlan 100 192.168.100.0/24 (-1)", "True", "True"}))
		Expect(row[4]).To(MatchRegexp(`^\d+(s|m|h|d)`))

		By("a new value held back by a slow CNI: Configured, not Ready")
		lift := holdNetworkStatus(ctx)
		setValue(ctx, net25)
		Eventually(func() []string {
			_, rows := settingsTable()
			return rows[v1beta1.MigrationNetwork][1:4]
		}).WithTimeout(framework.Long).Should(Equal([]string{"migration vlan 100 10.77.0.0/25", "True", "False"}))
		lift(ctx)
		Eventually(func() []string {
			_, rows := settingsTable()
			return rows[v1beta1.MigrationNetwork][1:4]
		}).WithTimeout(framework.Long).Should(Equal([]string{"migration vlan 100 10.77.0.0/25", "True", "True"}))
	})

	It("records events on the setting's transitions, once each, and on the VMI of a refused migration", func(ctx context.Context) {
		freshEventBudget(ctx)
		start := time.Now()
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		Eventually(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Short).Should(ContainElements(
			"Normal "+settingscontroller.ReasonApplied+": KubeVirt migrations.network points at "+expectedNAD(net24),
			MatchRegexp("^Normal "+netcontroller.ReasonReady+`: all \d+ eligible virt-handlers are on the migration network `+expectedNAD(net24)),
		))
		By("no further events while nothing changes")
		settled := settingEvents(ctx, start)
		Consistently(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(3 * time.Second).Should(Equal(settled))

		ns := f.Namespace(ctx)
		pin := func(node string) map[string]string { return map[string]string{"kubernetes.io/hostname": node} }
		f.StartVMI(ctx, framework.VMI(ns, "pinned", "node-1", pin("node-1")))
		f.StartVMI(ctx, framework.VMI(ns, "pinned-dry", "node-2", pin("node-2")))
		refuse := func(vmim client.Object, opts ...client.CreateOption) {
			Expect(f.Client.Create(ctx, vmim, opts...)).To(MatchError(ContainSubstring("feasibleTarget")))
		}
		refuse(framework.VMIM(ns, "dry", "pinned-dry", nil), client.DryRunAll)
		// Refused by migranet's vmiState and KubeVirt's own admitter alike; either answer will do.
		Expect(f.Client.Create(ctx, framework.VMIM(ns, "ghost", "missing", nil))).To(HaveOccurred())
		refuse(framework.VMIM(ns, "stuck", "pinned", nil))
		Eventually(vmiEvents).WithContext(ctx).WithArguments(ns, "pinned").WithTimeout(framework.Short).Should(ConsistOf(
			And(HavePrefix(settings.ReasonMigrationRefused+": migration stuck refused by migranet feasibleTarget: no node can receive"), ContainSubstring("pinned"))))
		out, stderr, err := f.Kubectl("", "describe", "vmi", "-n", ns, "pinned")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(MatchRegexp(`Warning\s+` + settings.ReasonMigrationRefused + `\s+.*migranet-webhook`))
		// The recorder writes in order: the event of the later refusal is there, so one for the
		// dry run or the missing VMI would be too.
		Expect(vmiEvents(ctx, ns, "pinned-dry")).To(BeEmpty(), "a dry run has no side effects")
		Expect(vmiEvents(ctx, ns, "missing")).To(BeEmpty(), "no VMI, no event")
	})

	It("exports admission decisions, reconcile steps and the network's state on the authenticated endpoint", func(ctx context.Context) {
		s := newScraper(ctx)
		metrics := func(ctx context.Context) map[string]float64 {
			m, err := s.scrape(ctx)
			Expect(err).NotTo(HaveOccurred())
			return m
		}
		decisions := func(rule, result string) string {
			return series(webhook.MetricAdmissionDecisions, "webhook", webhook.WebhookVMIMCreate, "rule", rule, "result", result)
		}
		reconciles := func(controller, step string) string {
			return series(statuswrite.MetricReconcileSteps, "controller", controller, "step", step, "result", statuswrite.StepSuccess)
		}
		var before map[string]float64
		Eventually(func() (err error) {
			before, err = s.scrape(ctx)
			return err
		}).WithTimeout(framework.Short).Should(Succeed(), "the metrics-reader binding takes effect")

		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "free", "node-1", nil))
		f.StartVMI(ctx, framework.VMI(ns, "pinned", "node-1", map[string]string{"kubernetes.io/hostname": "node-1"}))
		Expect(f.Client.Create(ctx, framework.VMIM(ns, "ok", "free", nil), client.DryRunAll)).To(Succeed())
		for i := range 4 {
			Expect(f.Client.Create(ctx, framework.VMIM(ns, fmt.Sprintf("no-%d", i), "pinned", nil), client.DryRunAll)).To(MatchError(ContainSubstring("feasibleTarget")))
		}

		after := metrics(ctx)
		// Exact counts: the VMIs run (so the cache has them) and nothing else creates migrations
		// meanwhile. Dry runs are decisions too.
		delta := func(key string) float64 { return after[key] - before[key] }
		Expect(delta(decisions(string(settings.RuleFeasibleTarget), webhook.ResultDenied))).To(Equal(4.0))
		Expect(delta(decisions(webhook.RuleNone, webhook.ResultAllowed))).To(Equal(1.0))
		Expect(after).To(HaveKey(decisions(string(settings.RuleKubeVirtReady), webhook.ResultWarned)), "every known series exists from the start")
		for _, key := range []string{reconciles(settingscontroller.ControllerName, settingscontroller.StepNAD), reconciles(settingscontroller.ControllerName, settingscontroller.StepKubeVirt),
			reconciles(settingscontroller.ControllerName, settingscontroller.StepStatus), reconciles(netcontroller.ControllerName, netcontroller.StepStatus)} {
			Expect(after[key]).To(BeNumerically(">", before[key]), key)
		}

		By("the gauges agree with what the spec counts itself: virt-handlers, their addresses, the pool")
		rng := netip.MustParsePrefix("192.168.100.0/24")
		Eventually(func(g Gomega) {
			m := metrics(ctx)
			// Every node runs a virt-handler here (no witness, no nodePlacement): one per eligible node.
			handlers, attached := 0, 0
			for _, p := range virtHandlers(ctx) {
				if p.DeletionTimestamp != nil {
					continue
				}
				handlers++
				if ip := migrationIP(&p); podReady(&p) && rng.Contains(ip) {
					attached++
				}
			}
			allocs, err := poolAllocations(ctx, "192.168.100.0-24")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(attached).To(Equal(handlers), "rolled out")
			g.Expect(m).To(HaveKeyWithValue(netcontroller.MetricReady, 1.0))
			g.Expect(m).To(HaveKeyWithValue(netcontroller.MetricConfigured, 1.0))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricNodes, "state", "eligible"), float64(handlers)))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricNodes, "state", "attached"), float64(attached)))
			// 192.168.100.0/24 minus network, broadcast and the one exclude: 256-3.
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricAddresses, "kind", "usable"), 253.0))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricAddresses, "kind", "used"), float64(len(allocs))))
			g.Expect(attached).To(BeNumerically(">", 0))
		}).WithTimeout(framework.Short).Should(Succeed())

		By("back on the pod network: not configured, no node or address series")
		resetToPodNetwork(ctx)
		Eventually(func(g Gomega) {
			m := metrics(ctx)
			g.Expect(m).To(HaveKeyWithValue(netcontroller.MetricConfigured, 0.0))
			g.Expect(m).To(HaveKeyWithValue(netcontroller.MetricReady, 1.0))
			g.Expect(m).NotTo(HaveKey(HavePrefix(netcontroller.MetricNodes)))
			g.Expect(m).NotTo(HaveKey(HavePrefix(netcontroller.MetricAddresses)))
		}).WithTimeout(framework.Short).Should(Succeed())
	})
})
