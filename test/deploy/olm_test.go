package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/migranet/migranet/test/cluster"
)

// The committed OLM bundle's ClusterServiceVersion and extras (make bundle; test/openshift checks
// they are what manifests/ generates).
var (
	olmCSV    = filepath.Join("manifests", "olm", "bundle", "manifests", "migranet.clusterserviceversion.yaml")
	olmExtras = filepath.Join("manifests", "olm", "extras.yaml")
)

// olmCover separates, in the README's "scope under OLM" cell, the scope the bundle's webhook
// carries from what keeps it to KubeVirt's namespace instead (OLM carries no namespaceSelector).
const olmCover = "; namespace by "

// upstreamCovers names, per resource, the upstream component whose own admission keeps every
// object of it in KubeVirt's namespace, as the README's table names it: virt-operator's KubeVirt
// create admitter refuses a second KubeVirt CR in any namespace ("Kubevirt is already created"),
// and HCO's webhook (pkg/webhooks/validator, ValidateCreate) refuses a HyperConverged CR outside
// HCO's namespace. Neither runs here: the test checks that the table names the right one.
var upstreamCovers = map[string]string{"kubevirts": "KubeVirt", "hyperconvergeds": "HCO"}

// csvWebhook is what the test reads of a CSV's webhook definition.
type csvWebhook struct {
	GenerateName            string                                       `json:"generateName"`
	Rules                   []admissionregistrationv1.RuleWithOperations `json:"rules"`
	FailurePolicy           *admissionregistrationv1.FailurePolicyType   `json:"failurePolicy"`
	SideEffects             *admissionregistrationv1.SideEffectClass     `json:"sideEffects"`
	TimeoutSeconds          *int32                                       `json:"timeoutSeconds"`
	ObjectSelector          *metav1.LabelSelector                        `json:"objectSelector"`
	AdmissionReviewVersions []string                                     `json:"admissionReviewVersions"`
}

// bundleHooks reads every webhook definition of the committed CSV, as the webhook OLM creates
// from it: no namespaceSelector (OLM sets none for an AllNamespaces install).
func bundleHooks() []hook {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), olmCSV))
	Expect(err).NotTo(HaveOccurred())
	var csv struct {
		Spec struct {
			InstallModes []struct {
				Type      string `json:"type"`
				Supported bool   `json:"supported"`
			} `json:"installModes"`
			WebhookDefinitions []csvWebhook `json:"webhookdefinitions"`
		} `json:"spec"`
	}
	Expect(yaml.Unmarshal(data, &csv)).To(Succeed())
	for _, m := range csv.Spec.InstallModes {
		Expect(m.Supported).To(Equal(m.Type == "AllNamespaces"), "install mode %s: the table's scopes assume AllNamespaces only", m.Type)
	}
	var out []hook
	for _, w := range csv.Spec.WebhookDefinitions {
		out = append(out, hook{name: w.GenerateName, rules: w.Rules, objectSelector: w.ObjectSelector, failurePolicy: w.FailurePolicy,
			timeoutSeconds: w.TimeoutSeconds, sideEffects: w.SideEffects, admissionReviewVersions: w.AdmissionReviewVersions})
	}
	return out
}

// olmKubeVirtNamespace is KubeVirt's namespace as the bundle's manager is told it.
func olmKubeVirtNamespace() string {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), olmCSV))
	Expect(err).NotTo(HaveOccurred())
	_, rest, found := strings.Cut(string(data), "--kubevirt-namespace=")
	Expect(found).To(BeTrue(), "the CSV's manager has no --kubevirt-namespace")
	return strings.Fields(rest)[0]
}

// extrasPolicy returns the ValidatingAdmissionPolicy name of the committed extras and its bindings.
func extrasPolicy(name string) (*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	data, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), olmExtras))
	Expect(err).NotTo(HaveOccurred())
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		var tm metav1.TypeMeta
		Expect(yaml.Unmarshal(doc, &tm)).To(Succeed())
		switch tm.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			Expect(yaml.Unmarshal(doc, p)).To(Succeed())
			if p.Name == name {
				policy = p
			}
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			Expect(yaml.Unmarshal(doc, b)).To(Succeed())
			if b.Spec.PolicyName == name {
				bindings = append(bindings, b)
			}
		}
	}
	Expect(policy).NotTo(BeNil(), "%s holds no ValidatingAdmissionPolicy %s", olmExtras, name)
	Expect(bindings).NotTo(BeEmpty(), "%s binds no ValidatingAdmissionPolicy %s", olmExtras, name)
	return policy, bindings
}

// The faults caught: a bundle whose webhook lost the objectSelector the table promises (every NAD
// DELETE in every namespace called migranet), a table row that says nothing of a namespace scope
// OLM cannot carry, and extras without the policy that covers it or with one that does not hold.
var _ = Describe("the OLM bundle's webhooks (manifests/olm)", func() {
	It("match the README's table under OLM, field by field, and name what covers each namespace scope", func() {
		rows := readmeWebhooks()
		hooks := bundleHooks()
		Expect(hooks).To(HaveLen(len(rows)), "one webhook definition per README row")
		ns := olmKubeVirtNamespace()
		for _, w := range hooks {
			Expect(rows).To(HaveKey(w.name))
			row := rows[w.name]
			scope, cover, _ := strings.Cut(row.olm, olmCover)
			if scope == "same" {
				scope = row.manifests[1]
			}
			want := slices.Clone(row.manifests)
			want[1] = scope
			Expect(cells(w)).To(Equal(want), "the bundle's %s against the README's row under OLM (operations, scope, failurePolicy, timeoutSeconds, sideEffects)", w.name)
			Expect(w.admissionReviewVersions).To(Equal([]string{"v1"}))
			if !strings.HasPrefix(row.manifests[1], "namespace ") {
				Expect(cover).To(BeEmpty(), "%s: the manifests do not narrow it by namespace, so nothing covers a namespace scope", w.name)
				continue
			}
			Expect(cover).NotTo(BeEmpty(), "%s: the manifests narrow it to a namespace, which OLM cannot carry: the README's row must say %q and what covers it", w.name, olmCover)
			if name, ok := strings.CutPrefix(cover, "policy "); ok {
				policy, bindings := extrasPolicy(name)
				Expect(w.objectSelector).NotTo(BeNil(), "%s: a policy can only keep a label in place for a webhook scoped by it", w.name)
				Expect(policy.Spec.MatchConstraints.ObjectSelector).To(Equal(w.objectSelector), "policy %s judges the objects %s intercepts", name, w.name)
				Expect(policy.Spec.MatchConstraints.NamespaceSelector.MatchExpressions).To(ConsistOf(metav1.LabelSelectorRequirement{
					Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{ns}}), "policy %s: every namespace but KubeVirt's", name)
				Expect(policy.Spec.MatchConstraints.ResourceRules).To(ContainElement(HaveField("RuleWithOperations.Rule.Resources", w.rules[0].Resources)))
				for _, b := range bindings {
					Expect(b.Spec.ValidationActions).To(ConsistOf(admissionregistrationv1.Deny), "binding %s", b.Name)
				}
				continue
			}
			owner, _, _ := strings.Cut(cover, ":")
			Expect(upstreamCovers).To(HaveKeyWithValue(w.rules[0].Resources[0], owner),
				"%s: %q names no component that keeps %s in KubeVirt's namespace", w.name, cover, w.rules[0].Resources[0])
		}
	})

	// The policy as the extras ship it, on the real API server: the label the webhook's
	// objectSelector selects is refused on a NAD outside KubeVirt's namespace (create, or added by
	// an update) and allowed inside it; any other NAD, and the label with another value, are left
	// alone.
	It("keeps migranet's NAD label in KubeVirt's namespace: the extras' policy on the API server", func(ctx context.Context) {
		policy, bindings := extrasPolicy("migranet-managed-nads")
		label := "app.kubernetes.io/managed-by"
		Expect(policy.Spec.MatchConstraints.ObjectSelector.MatchLabels).To(HaveKeyWithValue(label, "migranet"))
		kvNS, other := olmKubeVirtNamespace(), "vm-networks"
		for _, n := range []string{kvNS, other} {
			nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
			Expect(client.IgnoreAlreadyExists(f.Client.Create(ctx, nsObj))).To(Succeed())
			DeferCleanup(func(ctx context.Context) { _ = f.Client.Delete(ctx, nsObj) })
		}
		objs := []client.Object{policy}
		for _, b := range bindings {
			objs = append(objs, b)
		}
		for _, o := range objs {
			o.SetResourceVersion("")
			Expect(f.Client.Create(ctx, o)).To(Succeed())
			DeferCleanup(func(ctx context.Context) { _ = f.Client.Delete(ctx, o) })
		}
		nad := func(namespace, name string, labels map[string]string) *nadv1.NetworkAttachmentDefinition {
			return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
				Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge"}`}}
		}
		ours := map[string]string{label: "migranet"}
		// The API server compiles a new policy asynchronously: dry runs until it refuses.
		var refusal error
		Eventually(func() bool {
			refusal = f.Client.Create(ctx, nad(other, "stray", ours), client.DryRunAll)
			return apierrors.IsForbidden(refusal) || apierrors.IsInvalid(refusal)
		}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(BeTrue(), "a NAD labelled %s=migranet in %s: %v", label, other, refusal)
		Expect(refusal.Error()).To(And(ContainSubstring("metadata.labels"), ContainSubstring(other+"/stray"), ContainSubstring("remove the label")))

		Expect(f.Client.Create(ctx, nad(kvNS, "vm-migration-network-x", ours), client.DryRunAll)).To(Succeed(), "migranet's own NAD in %s", kvNS)
		Expect(f.Client.Create(ctx, nad(other, "vlan-10", nil), client.DryRunAll)).To(Succeed(), "a NAD without the label")
		Expect(f.Client.Create(ctx, nad(other, "theirs", map[string]string{label: "someone-else"}), client.DryRunAll)).To(Succeed(), "another manager's NAD")

		plain := nad(other, "vlan-20", nil)
		Expect(f.Client.Create(ctx, plain)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = f.Client.Delete(ctx, plain) })
		plain.Labels = ours
		err := f.Client.Update(ctx, plain, client.DryRunAll)
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "the label added to %s/vlan-20 by an update: %v", other, err)
	})
})
