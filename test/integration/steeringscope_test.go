package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/webhook"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// The steering webhook's scope as the API server applies it (the installed
// MutatingWebhookConfiguration, not the manifest read): only pods labelled as KubeVirt labels a
// migration's target pod ever reach migranet, counted by the handler itself. Fault caught, seen
// to fail once: the objectSelector's migrationJobUID expression dropped (not_target counts the
// plain virt-launcher pod).
var _ = Describe("the target pod steering webhook's scope", func() {
	It("is called for migration target pods only", func(ctx context.Context) {
		s := newScraper(ctx)
		total := func(ctx context.Context) map[string]float64 {
			m, err := s.scrape(ctx)
			Expect(err).NotTo(HaveOccurred())
			out := map[string]float64{}
			for _, r := range []string{webhook.SteerSteered, webhook.SteerNoTarget, webhook.SteerUnchanged, webhook.SteerNotTarget, webhook.SteerError} {
				out[r] = m[series(webhook.MetricTargetPods, "result", r)]
			}
			return out
		}
		var before map[string]float64
		Eventually(func() (err error) {
			_, err = s.scrape(ctx)
			return err
		}).WithTimeout(framework.Short).Should(Succeed(), "the metrics-reader binding takes effect")
		before = total(ctx)
		ns := f.Namespace(ctx)
		pod := func(name string, labels map[string]string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
				Annotations: map[string]string{kubevirtv1.DomainAnnotation: "no-such-vmi"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "none"}}}}
		}
		By("pods that are no migration target: a plain pod, a VMI's own virt-launcher pod, a migration's hotplug attachment pod")
		for _, p := range []*corev1.Pod{
			pod("plain", nil),
			pod("launcher", map[string]string{kubevirtv1.AppLabel: "virt-launcher"}),
			pod("hotplug", map[string]string{kubevirtv1.AppLabel: "hotplug-disk", kubevirtv1.MigrationJobLabel: "uid-1"}),
		} {
			Expect(f.Client.Create(ctx, p)).To(Succeed())
		}
		By("a migration target pod, whose VMI is unknown: it reaches the webhook, which leaves it unchanged")
		target := pod("target", map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: "uid-2"})
		Expect(f.Client.Create(ctx, target)).To(Succeed())
		Expect(target.Annotations).NotTo(HaveKey(migrationcheck.SteeringAnnotation))
		Eventually(total).WithContext(ctx).WithTimeout(framework.Short).Should(HaveKeyWithValue(webhook.SteerUnchanged, before[webhook.SteerUnchanged]+1))
		after := total(ctx)
		Expect(after[webhook.SteerNotTarget]).To(Equal(before[webhook.SteerNotTarget]), "no pod that is not a migration target reached the webhook")
		sum := func(m map[string]float64) float64 {
			t := 0.0
			for _, v := range m {
				t += v
			}
			return t
		}
		Expect(sum(after)).To(Equal(sum(before)+1), "exactly one review: the target pod's")
	})
})
