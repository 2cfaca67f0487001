package hcomode

import (
	"context"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// field is the HyperConverged CR's network field the stand-in's CRD serves (v1beta1).
var field, _ = hcomode.FieldOf(hcomode.V1beta1)

// own is migranet's vm-migration-network setting.
func own(ctx context.Context) *v1beta1.Setting {
	GinkgoHelper()
	s := &v1beta1.Setting{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
	return s
}

func condition(ctx context.Context, typ string) string { return f.SettingCondition(ctx, typ) }

// hyperConverged is HCO's HyperConverged CR.
func hyperConverged(ctx context.Context) *unstructured.Unstructured {
	GinkgoHelper()
	hc := field.New()
	Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: sim.HyperConvergedName}, hc)).To(Succeed())
	return hc
}

// hcNetwork is the HyperConverged CR's spec.liveMigrationConfig.network.
func hcNetwork(ctx context.Context) string { return field.Get(hyperConverged(ctx)) }

// kubeVirtNetwork is the KubeVirt CR's migrations.network.
func kubeVirtNetwork(ctx context.Context) string {
	GinkgoHelper()
	kv, err := f.KubeVirt(ctx)
	Expect(err).NotTo(HaveOccurred())
	return settings.MigrationNetworkOf(kv)
}

// setValue sets migranet's own value, as an admin edits the setting.
func setValue(ctx context.Context, value string) {
	GinkgoHelper()
	_, stderr, err := f.Kubectl("", "patch", "settings.migranet.io", v1beta1.MigrationNetwork, "--type", "merge",
		"-p", fmt.Sprintf(`{"value":%q}`, value))
	Expect(err).NotTo(HaveOccurred(), stderr)
}

// editHC sets the HyperConverged CR's network as someone else would (the console, oc edit); the
// stderr of kubectl is returned with its error.
func editHC(network string, extra ...string) (string, error) {
	patch := fmt.Sprintf(`{"spec":{"liveMigrationConfig":{"network":%q}}}`, network)
	_, stderr, err := f.Kubectl("", append([]string{"patch", "hyperconverged", "-n", cluster.KubeVirtNamespace, sim.HyperConvergedName,
		"--type", "merge", "-p", patch}, extra...)...)
	return stderr, err
}

// createNAD creates a NAD in the HyperConverged CR's namespace, as an OpenShift admin makes one.
func createNAD(ctx context.Context, name, config string) {
	GinkgoHelper()
	n := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: name},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
	Expect(f.Client.Create(ctx, n)).To(Succeed())
}

// waitInForce waits until nad ("" the pod network) is what the HyperConverged and KubeVirt CRs
// name and migranet's setting is Configured with reason, Ready, and (for a NAD) its paths proven.
func waitInForce(ctx context.Context, nad, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(hcNetwork(ctx)).To(Equal(nad), "the HyperConverged CR's network")
		g.Expect(kubeVirtNetwork(ctx)).To(Equal(nad), "the KubeVirt CR's network (HCO copies it)")
		g.Expect(condition(ctx, v1beta1.ConditionConfigured)).To(Equal("True/" + reason))
		g.Expect(own(ctx).Status.AppliedNetwork).To(Equal(nad))
	}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	ready := "True/" + netcontroller.ReasonPodNetwork
	if nad != "" {
		ready = "True/" + netcontroller.ReasonReady
	}
	Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).WithTimeout(framework.Long).
		Should(Equal(ready), func() string { return fmt.Sprintf("nodes %+v", own(ctx).Status.Nodes) })
	Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
	if nad != "" {
		f.WaitPathsProven(ctx)
	}
}

// virtHandlerGeneration is the virt-handler DaemonSet's generation: every change of its template
// (the <nad>@migration0 annotation virt-operator writes) restarts its rollout.
func virtHandlerGeneration(ctx context.Context) int64 {
	GinkgoHelper()
	ds := &appsv1.DaemonSet{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: sim.VirtHandlerName}, ds)).To(Succeed())
	return ds.Generation
}

// vmimYAML is a migration of vmi, left to the scheduler.
func vmimYAML(ns, name, vmi string) string {
	return fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: %s, namespace: %s}\nspec: {vmiName: %s}\n", name, ns, vmi)
}
