package deploy

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
)

const image = "example.invalid/migranet:deploy-test"

// makeDeploy runs the README's `make deploy` against the local control plane.
func makeDeploy(ctx context.Context, overlay string) string {
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "deploy", "KUBECTL="+f.Binaries.Kubectl, "IMG="+image, "OVERLAY="+overlay)
	cmd.Dir = cluster.RepoRoot()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig)
	out, err := cmd.CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "make deploy:\n%s", out)
	return string(out)
}

var _ = Describe("make deploy (default overlay, built-in certificates)", Ordered, func() {
	var objs []*unstructured.Unstructured

	BeforeAll(func(ctx context.Context) {
		var err error
		objs, err = env.RenderManifests(ctx, f.Binaries.Kubectl, "manifests")
		Expect(err).NotTo(HaveOccurred())
		out := makeDeploy(ctx, "manifests")
		Expect(strings.Count(out, "serverside-applied")).To(Equal(len(objs)), "one line per object:\n%s", out)
	})

	It("stores every rendered object", func(ctx context.Context) {
		kinds := map[string]int{}
		for _, want := range objs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(want), got)).To(Succeed(), "%s %s", want.GetKind(), want.GetName())
			kinds[want.GetKind()]++
		}
		for _, k := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "Role",
			"ClusterRoleBinding", "RoleBinding", "Service", "Deployment", "PodDisruptionBudget", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
			Expect(kinds).To(HaveKey(k))
		}
		// The built-in issuer creates its Secret: a shipped one makes every re-apply conflict
		// with the certificate written into it.
		Expect(kinds).NotTo(HaveKey("Secret"))
	})

	It("points every webhook at the Service, whose port reaches the container's webhook port", func(ctx context.Context) {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, cfg)).To(Succeed())
		Expect(cfg.Webhooks).To(HaveLen(5))
		svc := &corev1.Service{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "migranet-webhook"}, svc)).To(Succeed())
		for _, w := range cfg.Webhooks {
			ref := w.ClientConfig.Service
			Expect(ref).NotTo(BeNil(), w.Name)
			Expect(ref.Namespace + "/" + ref.Name).To(Equal(svc.Namespace + "/" + svc.Name))
			Expect(*ref.Port).To(Equal(svc.Spec.Ports[0].Port))
			Expect(*ref.Path).To(HavePrefix("/validate-"))
		}
		mcfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, mcfg)).To(Succeed())
		Expect(mcfg.Webhooks).To(HaveLen(1))
		Expect(mcfg.Webhooks[0].ClientConfig.Service).NotTo(BeNil())
		Expect(mcfg.Webhooks[0].ClientConfig.Service.Namespace + "/" + mcfg.Webhooks[0].ClientConfig.Service.Name).To(Equal(svc.Namespace + "/" + svc.Name))
		Expect(*mcfg.Webhooks[0].ClientConfig.Service.Path).To(Equal("/mutate-v1-pod-migration-target"))
		dep := &appsv1.Deployment{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "migranet"}, dep)).To(Succeed())
		ports := map[string]int32{}
		for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
			ports[p.Name] = p.ContainerPort
		}
		Expect(ports).To(HaveKeyWithValue(svc.Spec.Ports[0].TargetPort.StrVal, int32(9443)))
		Expect(svc.Spec.Selector).To(Equal(dep.Spec.Selector.MatchLabels))
		Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
		Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--cert-rotation", "--webhook-configuration="+env.WebhookConfig, "--mutating-webhook-configuration="+env.WebhookConfig))
	})

	It("runs two replicas that pass the restricted Pod Security level, on different nodes", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(f.Client.List(ctx, pods, client.InNamespace(env.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "migranet"})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			nodes := map[string]bool{}
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
				g.Expect(p.Spec.ServiceAccountName).To(Equal(env.ServiceAccount))
				nodes[p.Spec.NodeName] = true
			}
			g.Expect(nodes).To(HaveLen(2), "anti-affinity spreads the replicas")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("is idempotent: a second make deploy changes nothing", func(ctx context.Context) {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, cfg)).To(Succeed())
		before := cfg.ResourceVersion
		makeDeploy(ctx, "manifests")
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, cfg)).To(Succeed())
		Expect(cfg.ResourceVersion).To(Equal(before))
	})
})

var _ = Describe("the cert-manager overlay", func() {
	It("leaves the Secret and the CA bundle to cert-manager, for the Service's DNS names", func(ctx context.Context) {
		objs, err := env.RenderManifests(ctx, f.Binaries.Kubectl, "manifests/overlays/cert-manager")
		Expect(err).NotTo(HaveOccurred())
		byKind := map[string]*unstructured.Unstructured{}
		for _, o := range objs {
			byKind[o.GetKind()] = o
		}
		Expect(byKind).NotTo(HaveKey("Secret"), "cert-manager creates the Secret")
		Expect(byKind["ValidatingWebhookConfiguration"].GetAnnotations()).To(HaveKeyWithValue(
			"cert-manager.io/inject-ca-from", env.Namespace+"/migranet-webhook"))
		Expect(byKind["MutatingWebhookConfiguration"].GetAnnotations()).To(HaveKeyWithValue(
			"cert-manager.io/inject-ca-from", env.Namespace+"/migranet-webhook"))
		cert := byKind["Certificate"]
		Expect(cert).NotTo(BeNil())
		Expect(cert.GroupVersionKind()).To(Equal(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}))
		secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		Expect(secret).To(Equal(env.CertSecret))
		dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		Expect(dns).To(ContainElement("migranet-webhook." + env.Namespace + ".svc"))
		args, _, _ := unstructured.NestedSlice(byKind["Deployment"].Object, "spec", "template", "spec", "containers")
		Expect(args[0].(map[string]any)["args"]).To(ContainElement("--cert-secret=" + env.CertSecret))
		Expect(args[0].(map[string]any)["args"]).NotTo(ContainElement("--cert-rotation"))
		for _, o := range objs {
			if o.GetKind() != "Role" || o.GetNamespace() != env.Namespace {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			var secretVerbs []any
			for _, r := range rules {
				rule := r.(map[string]any)
				if resources, _ := rule["resources"].([]any); slices.Contains(resources, any("secrets")) {
					secretVerbs = append(secretVerbs, rule["verbs"].([]any)...)
				}
			}
			Expect(secretVerbs).To(ConsistOf("get", "list", "watch"), "migranet only reads the Secret cert-manager writes")
		}
	})
})
