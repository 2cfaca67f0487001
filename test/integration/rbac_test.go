package integration

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	settingscontroller "github.com/migranet/migranet/settings/controller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

// The manager runs as the default overlay's ServiceAccount, bound to the roles controller-gen
// generates from the +kubebuilder:rbac markers (manifests/rbac/role.yaml). These specs and the
// suite-end check (framework.RBAC, suite_test.go) make a missing permission (a 403 in the audit
// log) and an excess one (a granted permission the whole suite never used) test failures.

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
		// From the pod network, converged (the KubeVirt CR names no NAD): a previous spec's reset
		// still in flight when the rule goes would leave the CR naming that spec's NAD, and a value
		// it already names needs no patch (seen in CI: Applied throughout). The value is this
		// spec's own for the same reason.
		expectConverged(ctx, "")
		value := rangeValue(71, 1)
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
		DeferCleanup(func(ctx context.Context) { restore(ctx); f.ExpectRefusedDuring(from, time.Now()) })
		// The API server authorizes from its RBAC informer: until it has the new Role, a patch is
		// still allowed, and a controller quicker than that applies the value (a clean-clone CI run
		// stayed Applied). The authorizer itself says when the rule is gone.
		Eventually(func() (bool, error) { return managerMay(ctx, "patch", "kubevirt.io", "kubevirts") }).
			WithContext(ctx).WithTimeout(framework.Short).Should(BeFalse())

		setValue(ctx, value)
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).WithTimeout(framework.Long).
			Should(Equal("False/" + settingscontroller.ReasonKubeVirtFailed))
		Expect(conditionMessage(ctx, v1beta1.ConditionConfigured)).To(ContainSubstring("forbidden"))
		restore(ctx)
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).WithTimeout(framework.Long).
			Should(Equal("True/" + settingscontroller.ReasonApplied))
		f.ExpectRefusedDuring(from, time.Now())
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
