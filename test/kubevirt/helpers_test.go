package kubevirt

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

const net24 = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`

func vmimYAML(ns, name, vmi string, annotations ...string) string {
	ann := ""
	if len(annotations) > 0 {
		ann = ", annotations: {" + strings.Join(annotations, ", ") + "}"
	}
	return fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: %s, namespace: %s%s}\nspec: {vmiName: %s}\n", name, ns, ann, vmi)
}

// networkCondition returns "<status>/<reason>" of a vm-migration-network condition, or "stale"
// while it describes an older generation.
func networkCondition(ctx context.Context, typ string) string {
	return f.SettingCondition(ctx, typ)
}

// waitNetworkReady waits until vm-migration-network is Configured and Ready with readyReason.
func waitNetworkReady(ctx context.Context, readyReason string) {
	EventuallyWithOffset(1, networkCondition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
		WithTimeout(framework.Long).Should(HavePrefix("True/"))
	EventuallyWithOffset(1, networkCondition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
		WithTimeout(framework.Long).Should(Equal("True/" + readyReason))
	if readyReason == netcontroller.ReasonReady {
		f.WaitPathsProven(ctx)
	}
}

// resetSettings puts both settings back to their defaults and waits for the pod network and an
// Available KubeVirt: with the pod network, Ready does not wait for the virt-handler roll that
// takes migration0 away, but migranet's kubevirtReady rule (and so the next spec) does.
func resetSettings(ctx context.Context) {
	// A migration admitted while the spec's cleanup ran (ci: a drained VMI's evacuation, once the
	// path healed, in a namespace being deleted) holds the network change back until it ends, as
	// the settings webhook tells an admin: wait until it succeeds or fails.
	for _, name := range []string{v1beta1.MigrationPolicy, v1beta1.MigrationNetwork} {
		EventuallyWithOffset(1, f.PatchSetting).WithContext(ctx).WithArguments(name, "").WithTimeout(framework.Long).Should(Succeed())
	}
	waitNetworkReady(ctx, netcontroller.ReasonPodNetwork)
	ExpectWithOffset(1, f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
}

// migration returns the migration, failing the spec if it cannot be read.
func migration(ctx context.Context, ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vmim)).To(Succeed())
	return vmim
}

// migrationPhase returns a migration's phase, or the error reading it.
func migrationPhase(ctx context.Context, ns, name string) string {
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vmim); err != nil {
		return err.Error()
	}
	return string(vmim.Status.Phase)
}

// phases lists the phases a migration went through, in order.
func phases(vmim *kubevirtv1.VirtualMachineInstanceMigration) []kubevirtv1.VirtualMachineInstanceMigrationPhase {
	var out []kubevirtv1.VirtualMachineInstanceMigrationPhase
	for _, t := range vmim.Status.PhaseTransitionTimestamps {
		out = append(out, t.Phase)
	}
	return out
}

// vmi returns the VMI, failing the spec if it cannot be read.
func vmi(ctx context.Context, ns, name string) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, v)).To(Succeed())
	return v
}

// virtHandlerOn returns the running virt-handler pod of node.
func virtHandlerOn(ctx context.Context, node string) *corev1.Pod {
	pods := &corev1.PodList{}
	ExpectWithOffset(1, f.Client.List(ctx, pods, client.InNamespace(cluster.KubeVirtNamespace),
		client.MatchingLabels{sim.VirtHandlerLabel: sim.VirtHandlerName})).To(Succeed())
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p
		}
	}
	Fail("no running virt-handler pod on " + node)
	return nil
}

// kubectlWithToken runs the real kubectl authenticated by a bearer token alone.
func kubectlWithToken(token, stdin string, args ...string) (string, error) {
	base := []string{"--kubeconfig", "/dev/null", "--server", f.Config.Host,
		"--certificate-authority", filepath.Join(f.Dir, "pki", "ca.crt"), "--token", token}
	cmd := exec.Command(f.Binaries.Kubectl, append(base, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
