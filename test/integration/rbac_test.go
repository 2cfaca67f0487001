package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	settingscontroller "github.com/migranet/migranet/settings/controller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

// The manager runs as the default overlay's ServiceAccount, bound to the roles controller-gen
// generates from the +kubebuilder:rbac markers (manifests/rbac/role.yaml). These specs and the
// suite-end check below make a missing permission (a 403 in the audit log) and an excess one (a
// granted permission the whole suite never used) test failures.

// forbiddenWindows are the periods in which a spec removed a permission on purpose.
var forbiddenWindows struct {
	sync.Mutex
	spans [][2]time.Time
}

func expectForbiddenDuring(from, to time.Time) {
	forbiddenWindows.Lock()
	defer forbiddenWindows.Unlock()
	forbiddenWindows.spans = append(forbiddenWindows.spans, [2]time.Time{from.Add(-time.Second), to.Add(time.Second)})
}

func inForbiddenWindow(t time.Time) bool {
	forbiddenWindows.Lock()
	defer forbiddenWindows.Unlock()
	for _, s := range forbiddenWindows.spans {
		if !t.Before(s[0]) && !t.After(s[1]) {
			return true
		}
	}
	return false
}

// grant is one verb on one resource that the generated roles allow.
type grant struct {
	namespace, group, resource, verb, name string // namespace "" for the ClusterRole; name "" for any
}

func (g grant) String() string {
	where := "cluster-wide"
	if g.namespace != "" {
		where = "in " + g.namespace
	}
	name := ""
	if g.name != "" {
		name = " named " + g.name
	}
	return fmt.Sprintf("%s %s.%s%s %s", g.verb, g.resource, g.group, name, where)
}

// generatedGrants reads manifests/rbac/role.yaml.
func generatedGrants() []grant {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "manifests", "rbac", "role.yaml"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []grant
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var role rbacv1.Role // a ClusterRole decodes into the same fields
		err := dec.Decode(&role)
		if errors.Is(err, io.EOF) {
			return out
		}
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						names := r.ResourceNames
						if len(names) == 0 {
							names = []string{""}
						}
						for _, n := range names {
							out = append(out, grant{role.Namespace, g, res, v, n})
						}
					}
				}
			}
		}
	}
}

// usedBy reports whether the audited request used grant g.
func (g grant) usedBy(e framework.AuditEvent) bool {
	if e.ObjectRef == nil || e.Verb != g.verb || e.ObjectRef.APIGroup != g.group || e.Resource() != g.resource {
		return false
	}
	if g.namespace != "" && e.ObjectRef.Namespace != g.namespace {
		return false
	}
	return g.name == "" || e.ObjectRef.Name == g.name
}

// mayStayUnused are grants whose use depends on timing, not on a code path the suite may skip.
var mayStayUnused = map[grant]string{
	{"", "", "events", "patch", ""}: "the event recorder patches only an event that repeats within its aggregation window",
	// This cluster is not Harvester: the manager finds no settings.harvesterhci.io resource and
	// sends no request for it. test/harvestermode checks these three are used there.
	{"", "harvesterhci.io", "settings", "get", ""}:   "used only in Harvester mode (test/harvestermode)",
	{"", "harvesterhci.io", "settings", "list", ""}:  "used only in Harvester mode (test/harvestermode)",
	{"", "harvesterhci.io", "settings", "watch", ""}: "used only in Harvester mode (test/harvestermode)",
	// Nor HCO: the HyperConverged CR exists only under the HyperConverged operator (HCO mode).
	{"kubevirt", "hco.kubevirt.io", "hyperconvergeds", "get", ""}:   "used only in HCO mode",
	{"kubevirt", "hco.kubevirt.io", "hyperconvergeds", "list", ""}:  "used only in HCO mode",
	{"kubevirt", "hco.kubevirt.io", "hyperconvergeds", "watch", ""}: "used only in HCO mode",
	{"kubevirt", "hco.kubevirt.io", "hyperconvergeds", "patch", ""}: "used only in HCO mode",
	// The path-abort controller aborts a streaming migration; its specs run with KubeVirt's own
	// virt-controller (test/kubevirt/pathabort_test.go), whose audit check covers these two.
	{"", "kubevirt.io", "virtualmachineinstancemigrations", "patch", ""}:  "used by the path-abort controller (test/kubevirt)",
	{"", "kubevirt.io", "virtualmachineinstancemigrations", "delete", ""}: "used by the path-abort controller (test/kubevirt)",
}

var _ = AfterSuite(func() {
	if f == nil {
		return
	}
	events := f.ExpectNeverForbidden(env.ManagerUser, inForbiddenWindow)
	cfg, _ := GinkgoConfiguration()
	if len(cfg.FocusStrings) > 0 || len(cfg.SkipStrings) > 0 || cfg.LabelFilter != "" {
		GinkgoWriter.Println("rbac: partial run, the unused-permission check needs the whole suite")
		return
	}
	By("every generated permission was used by some request during the suite")
	var unused []string
	for _, g := range generatedGrants() {
		if _, ok := mayStayUnused[g]; ok {
			continue
		}
		if !slices.ContainsFunc(events, g.usedBy) {
			unused = append(unused, g.String())
		}
	}
	Expect(unused).To(BeEmpty(), "granted but never used by the manager: remove the marker, or add a spec that exercises it")
})

// managerMay asks the API server's authorizer whether migranet's identity may verb resource of
// group in KubeVirt's namespace.
func managerMay(ctx context.Context, verb, group, resource string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: env.ManagerUser,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: cluster.KubeVirtNamespace, Verb: verb, Group: group, Resource: resource}}}
	got, err := f.Clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return got.Status.Allowed, nil
}

var _ = Describe("least-privilege RBAC", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	It("makes a removed rule visible: without patch on KubeVirt the setting is not Configured, with it again it is", func(ctx context.Context) {
		role := &rbacv1.Role{}
		key := client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: "migranet-manager"}
		Expect(f.Client.Get(ctx, key, role)).To(Succeed())
		saved := role.DeepCopy()
		removed := false
		for i, r := range role.Rules {
			if slices.Contains(r.Resources, "kubevirts") {
				role.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "patch" })
				removed = true
			}
		}
		Expect(removed).To(BeTrue(), "the generated kubevirt Role grants patch on kubevirts")
		from := time.Now()
		Expect(f.Client.Update(ctx, role)).To(Succeed())
		restore := func(ctx context.Context) {
			now := &rbacv1.Role{}
			Expect(f.Client.Get(ctx, key, now)).To(Succeed())
			now.Rules = saved.Rules
			Expect(f.Client.Update(ctx, now)).To(Succeed())
		}
		DeferCleanup(func(ctx context.Context) { restore(ctx); expectForbiddenDuring(from, time.Now()) })
		// The API server authorizes from its RBAC informer: until it has the new Role, a patch is
		// still allowed, and a controller quicker than that applies the value (a clean-clone CI run
		// stayed Applied). The authorizer itself says when the rule is gone.
		Eventually(func() (bool, error) { return managerMay(ctx, "patch", "kubevirt.io", "kubevirts") }).
			WithContext(ctx).WithTimeout(framework.Short).Should(BeFalse())

		setValue(ctx, net24)
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).WithTimeout(framework.Long).
			Should(Equal("False/" + settingscontroller.ReasonKubeVirtFailed))
		Expect(conditionMessage(ctx, v1beta1.ConditionConfigured)).To(ContainSubstring("forbidden"))
		restore(ctx)
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).WithTimeout(framework.Long).
			Should(Equal("True/" + settingscontroller.ReasonApplied))
		expectForbiddenDuring(from, time.Now())
	})

	It("serves metrics only to a token allowed GET /metrics", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		scraper := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
		Expect(f.Client.Create(ctx, scraper)).To(Succeed())
		token := func() string {
			tr, err := f.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, scraper.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}()
		scrape := func() (int, string) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.Manager.MetricsURL(), nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+token)
			// The metrics endpoint's certificate is self-signed by controller-runtime; Prometheus
			// is configured the same way (tls_config.insecure_skip_verify) or given a real one.
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
			resp, err := hc.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		code, _ := scrape()
		Expect(code).To(Equal(http.StatusForbidden), "a token without the metrics-reader binding")

		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-" + ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "migranet-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: scraper.Name}},
		}
		Expect(f.Client.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, binding))).To(Succeed()) })
		// The endpoint caches a denial for a few seconds, as kube-rbac-proxy does.
		Eventually(func(g Gomega) {
			code, body := scrape()
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
		}).WithTimeout(framework.Long).WithPolling(time.Second).Should(Succeed())
	})
})

// conditionMessage returns the message of the setting's condition typ.
func conditionMessage(ctx context.Context, typ string) string {
	for _, c := range setting(ctx).Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}
