package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
)

// The images the two releases run, so the rollout is visible.
const (
	previousImage = "example.invalid/migranet:previous"
	currentImage  = "example.invalid/migranet:current"
)

// decode reads a multi-document manifest.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// key names an object across releases: group, kind, namespace, name.
func key(u *unstructured.Unstructured) string {
	return u.GroupVersionKind().Group + " " + named(u)
}

// named is how an admin names an object: "Kind namespace/name", or "Kind name" when it has no
// namespace.
func named(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// kubectl runs the real kubectl against the local control plane with manifest on stdin.
func kubectl(ctx context.Context, manifest []byte, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, f.Binaries.Kubectl, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(manifest), &out, &out
	err := cmd.Run()
	return out.String(), err
}

// apply is the README's upgrade: `kubectl apply --server-side -f migranet.yaml`.
func apply(ctx context.Context, manifest []byte) (string, error) {
	return kubectl(ctx, manifest, "apply", "--server-side", "-f", "-")
}

// live reads the object u names as the API server holds it.
func live(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	return got, f.Client.Get(ctx, client.ObjectKeyFromObject(u), got)
}

// setting is one of the two settings as the previous release's manager leaves it: a value and a
// status its controllers wrote.
func setting(name, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "migranet.io/v1beta1", "kind": "Setting",
		"metadata": map[string]any{"name": name}, "value": value,
	}}
	return u
}

// settingStatus is a status the previous release's controllers could have written.
func settingStatus(summary string) map[string]any {
	return map[string]any{
		"summary":     summary,
		"appliedHash": "0123456789abcdef",
		"conditions": []any{map[string]any{"type": "Configured", "status": "True", "reason": "Applied",
			"message": "set before the upgrade", "lastTransitionTime": "2026-11-01T00:00:00Z", "observedGeneration": int64(1)}},
	}
}

// pathReport is node-1's report as the previous release's agent wrote it.
func pathReport() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "migranet.io/v1beta1", "kind": "PathReport",
		"metadata": map[string]any{"name": "node-1"},
		"network":  "kubevirt/vm-migration-network-0123456789", "address": "192.168.100.2",
		"intervalSeconds": int64(20), "since": "2026-11-01T00:00:00Z",
	}}
}

// rolledOut reports whether the Deployment or DaemonSet named by u runs image on every pod it
// wants, with no pod of another image left.
func rolledOut(ctx context.Context, g Gomega, u *unstructured.Unstructured, image string) {
	var selector map[string]string
	switch u.GetKind() {
	case "Deployment":
		d := &appsv1.Deployment{}
		g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(u), d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(Equal(*d.Spec.Replicas), "conditions %+v", d.Status.Conditions)
		g.Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas))
		g.Expect(d.Status.Replicas).To(Equal(*d.Spec.Replicas), "old pods still counted")
		selector = d.Spec.Selector.MatchLabels
	case "DaemonSet":
		d := &appsv1.DaemonSet{}
		g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(u), d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.DesiredNumberScheduled).To(BeNumerically(">", 0), "conditions %+v", d.Status.Conditions)
		g.Expect(d.Status.UpdatedNumberScheduled).To(Equal(d.Status.DesiredNumberScheduled))
		g.Expect(d.Status.NumberAvailable).To(Equal(d.Status.DesiredNumberScheduled))
		selector = d.Spec.Selector.MatchLabels
	}
	pods := &corev1.PodList{}
	g.Expect(f.Client.List(ctx, pods, client.InNamespace(u.GetNamespace()), client.MatchingLabels(selector))).To(Succeed())
	g.Expect(pods.Items).NotTo(BeEmpty())
	for _, p := range pods.Items {
		g.Expect(p.Spec.Containers[0].Image).To(Equal(image), "pod %s", p.Name)
	}
}

var _ = Describe("upgrading from the previous release", Ordered, ContinueOnFailure, func() {
	var (
		prev             From
		oldObjs, newObjs []*unstructured.Unstructured
		oldYAML, newYAML []byte
		uids             map[string]types.UID
		applyOutput      string
		settings         = []*unstructured.Unstructured{
			setting("vm-migration-network", `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`),
			setting("migration-policy", `{"rules":{"feasibleTarget":"warn"},"exemptUsers":["system:serviceaccount:kubevirt:kubevirt-controller"]}`),
		}
	)

	BeforeAll(func(ctx context.Context) {
		var err error
		prev, err = PreviousRelease(ctx, f.Binaries.Kubectl)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("upgrading from", prev.Why)
		fmt.Fprintf(GinkgoWriter, "upgrading from %s\n", prev.Why)
		oldYAML, err = RenderAt(ctx, f.Binaries.Kubectl, prev.Commit, previousImage)
		Expect(err).NotTo(HaveOccurred())
		newYAML, err = RenderAt(ctx, f.Binaries.Kubectl, "", currentImage)
		Expect(err).NotTo(HaveOccurred())
		oldObjs, err = decode(oldYAML)
		Expect(err).NotTo(HaveOccurred())
		newObjs, err = decode(newYAML)
		Expect(err).NotTo(HaveOccurred())

		By("installing the previous release's CRDs, and what its manager and agents wrote: both settings with status, a PathReport")
		var crds []byte
		for _, o := range oldObjs {
			if o.GetKind() == "CustomResourceDefinition" {
				data, err := o.MarshalJSON()
				Expect(err).NotTo(HaveOccurred())
				crds = append(append(crds, data...), '\n')
			}
		}
		out, err := apply(ctx, crds)
		Expect(err).NotTo(HaveOccurred(), out)
		for i, s := range settings {
			Eventually(func() error { return f.Client.Create(ctx, s.DeepCopy()) }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
			got := setting(s.GetName(), "")
			Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
			got.Object["status"] = settingStatus(fmt.Sprintf("status %d", i))
			Expect(f.Client.Status().Update(ctx, got)).To(Succeed())
		}
		Eventually(func() error { return f.Client.Create(ctx, pathReport()) }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("installing the previous release as the README says, and letting it roll out")
		out, err = apply(ctx, oldYAML)
		Expect(err).NotTo(HaveOccurred(), out)
		for _, o := range oldObjs {
			if k := o.GetKind(); k == "Deployment" || k == "DaemonSet" {
				Eventually(func(g Gomega) { rolledOut(ctx, g, o, previousImage) }).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
			}
		}
		uids = map[string]types.UID{}
		for _, o := range append(append([]*unstructured.Unstructured(nil), oldObjs...), append(settings, pathReport())...) {
			got, err := live(ctx, o)
			Expect(err).NotTo(HaveOccurred(), key(o))
			uids[key(o)] = got.GetUID()
		}

		By("upgrading: the current manifests, the same command")
		applyOutput, err = apply(ctx, newYAML)
		Expect(err).NotTo(HaveOccurred(), "the upgrade's apply failed:\n%s", applyOutput)
	}, NodeTimeout(5*time.Minute))

	It("applies every object of the current manifests, one line each", func() {
		Expect(strings.Count(applyOutput, "serverside-applied")).To(Equal(len(newObjs)), applyOutput)
	})

	It("keeps both settings, their values and status, and the PathReport, as they were", func(ctx context.Context) {
		for i, s := range settings {
			got, err := live(ctx, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.GetUID()).To(Equal(uids[key(s)]), "setting %s was recreated", s.GetName())
			Expect(got.Object["value"]).To(Equal(s.Object["value"]), "setting %s's value", s.GetName())
			want, err := normalize(settingStatus(fmt.Sprintf("status %d", i)))
			Expect(err).NotTo(HaveOccurred())
			have, err := normalize(got.Object)
			Expect(err).NotTo(HaveOccurred())
			Expect(differences("status", want, have.(map[string]any)["status"])).To(BeEmpty(), "setting %s's status", s.GetName())
		}
		report, err := live(ctx, pathReport())
		Expect(err).NotTo(HaveOccurred())
		Expect(report.GetUID()).To(Equal(uids[key(pathReport())]))
		Expect(report.Object["address"]).To(Equal("192.168.100.2"))
	})

	It("updates in place what both releases install: nothing deleted and created anew", func(ctx context.Context) {
		for _, o := range newObjs {
			uid, both := uids[key(o)]
			if !both {
				continue
			}
			got, err := live(ctx, o)
			Expect(err).NotTo(HaveOccurred(), key(o))
			Expect(got.GetUID()).To(Equal(uid), "%s was recreated", key(o))
		}
	})

	It("leaves every object as the current manifests say; a second apply would change nothing", func(ctx context.Context) {
		for _, o := range newObjs {
			got, err := live(ctx, o)
			Expect(err).NotTo(HaveOccurred(), key(o))
			want, err := normalize(o.Object)
			Expect(err).NotTo(HaveOccurred())
			have, err := normalize(got.Object)
			Expect(err).NotTo(HaveOccurred())
			Expect(differences(key(o), want, have)).To(BeEmpty())
		}
		out, err := kubectl(ctx, newYAML, "diff", "--server-side", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), "kubectl diff --server-side after the upgrade:\n%s", out)
	})

	It("duplicates no webhook and no workload", func(ctx context.Context) {
		hooks := map[string][]string{}
		vcfgs := &unstructured.UnstructuredList{}
		vcfgs.SetAPIVersion("admissionregistration.k8s.io/v1")
		for _, kind := range []string{"ValidatingWebhookConfigurationList", "MutatingWebhookConfigurationList"} {
			vcfgs.SetKind(kind)
			Expect(f.Client.List(ctx, vcfgs)).To(Succeed())
			for _, cfg := range vcfgs.Items {
				list, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
				for _, h := range list {
					name, _ := h.(map[string]any)["name"].(string)
					hooks[name] = append(hooks[name], strings.TrimSuffix(kind, "List")+" "+cfg.GetName())
				}
			}
		}
		for name, in := range hooks {
			Expect(in).To(HaveLen(1), "webhook %s is served by %d configurations: %v", name, len(in), in)
		}
		var workloads []string
		for _, ns := range []string{"migranet-system", "migranet-probe"} {
			deps := &appsv1.DeploymentList{}
			Expect(f.Client.List(ctx, deps, client.InNamespace(ns))).To(Succeed())
			for _, d := range deps.Items {
				workloads = append(workloads, "Deployment "+ns+"/"+d.Name)
			}
			dss := &appsv1.DaemonSetList{}
			Expect(f.Client.List(ctx, dss, client.InNamespace(ns))).To(Succeed())
			for _, d := range dss.Items {
				workloads = append(workloads, "DaemonSet "+ns+"/"+d.Name)
			}
		}
		var want []string
		for _, o := range newObjs {
			if k := o.GetKind(); k == "Deployment" || k == "DaemonSet" {
				want = append(want, k+" "+o.GetNamespace()+"/"+o.GetName())
			}
		}
		Expect(workloads).To(ConsistOf(want))
	})

	It("rolls the manager's Deployment and the probe agents' DaemonSet to the new image", func(ctx context.Context) {
		for _, o := range newObjs {
			if k := o.GetKind(); k == "Deployment" || k == "DaemonSet" {
				Eventually(func(g Gomega) { rolledOut(ctx, g, o, currentImage) }).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
			}
		}
	})

	It("leaves what only the previous release installed, and the CHANGELOG names each such object", func(ctx context.Context) {
		current := map[string]bool{}
		for _, o := range newObjs {
			current[key(o)] = true
		}
		changelog, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "CHANGELOG.md"))
		Expect(err).NotTo(HaveOccurred())
		var left []string
		for _, o := range oldObjs {
			if current[key(o)] {
				continue
			}
			name := named(o)
			left = append(left, name)
			_, err := live(ctx, o)
			Expect(err).NotTo(HaveOccurred(), "%s: server-side apply prunes nothing, yet it is gone", name)
			Expect(string(changelog)).To(ContainSubstring(name), "%s is left on upgrade: the CHANGELOG must name it (%q) and say to delete it", name, name)
		}
		AddReportEntry("left by the upgrade", left)
		fmt.Fprintf(GinkgoWriter, "left by the upgrade (installed by the previous release only): %v\n", left)
	})

	It("downgrades with the previous release's manifests: the apply succeeds, settings kept, objects and workloads as the previous release says", func(ctx context.Context) {
		out, err := apply(ctx, oldYAML)
		Expect(err).NotTo(HaveOccurred(), "the downgrade's apply failed:\n%s", out)
		for _, s := range settings {
			got, err := live(ctx, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.GetUID()).To(Equal(uids[key(s)]), "setting %s was recreated", s.GetName())
			Expect(got.Object["value"]).To(Equal(s.Object["value"]), "setting %s's value", s.GetName())
		}
		out, err = kubectl(ctx, oldYAML, "diff", "--server-side", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), "kubectl diff --server-side after the downgrade:\n%s", out)
		for _, o := range oldObjs {
			if k := o.GetKind(); k == "Deployment" || k == "DaemonSet" {
				Eventually(func(g Gomega) { rolledOut(ctx, g, o, previousImage) }).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
			}
		}
	})
})
