package framework

import (
	"context"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
)

// WithoutMigranet runs the enclosing Ordered container with every migranet replica stopped, so
// the specs see the simulators alone (migranet's settings controller would otherwise put the
// KubeVirt CR back in line with the setting). Afterwards it starts the replicas again, waits for
// their webhooks, unsets the KubeVirt CR's migrations.network the specs set by hand, waits for
// KubeVirt to be Available again and deletes the hand-made NADs named. Call it while the spec
// tree is built, with the suite's Framework variable (set later, in BeforeSuite).
func WithoutMigranet(suite **Framework, nads ...string) {
	BeforeAll(func() { (*suite).StopReplicas() })
	AfterAll(func(ctx context.Context) {
		f := *suite
		Expect(f.StartReplicas(ctx)).To(Succeed())
		Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
		f.SetKubeVirtMigrationNetwork(ctx, "")
		Expect(f.WaitKubeVirtAvailable(ctx, Long)).To(Succeed())
		for _, name := range nads {
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, &nadv1.NetworkAttachmentDefinition{
				ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: name}}))).To(Succeed())
		}
	})
}

// SetKubeVirtMigrationNetwork sets the KubeVirt CR's spec.configuration.migrations.network by
// hand, as an admin would with kubectl ("" removes it).
func (f *Framework) SetKubeVirtMigrationNetwork(_ context.Context, name string) {
	patch := `{"spec":{"configuration":{"migrations":{"network":null}}}}`
	if name != "" {
		patch = fmt.Sprintf(`{"spec":{"configuration":{"migrations":{"network":%q}}}}`, name)
	}
	_, stderr, err := f.Kubectl("", "patch", "kubevirt", "-n", cluster.KubeVirtNamespace, cluster.KubeVirtName, "--type", "merge", "-p", patch)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), stderr)
}
