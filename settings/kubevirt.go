package settings

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Facts of KubeVirt v1.8/v1.9 that migranet reads or writes, each in one place.
const (
	// DefaultKubeVirtNamespace is where KubeVirt's own install puts the KubeVirt CR; every
	// migranet command takes --kubevirt-namespace for another.
	DefaultKubeVirtNamespace = "kubevirt"
	// KubeVirtReadyReason is the reason of the KubeVirt CR's Available condition once every
	// component is ready.
	KubeVirtReadyReason = "AllComponentsReady"
	// VirtHandlerLabel and VirtHandlerValue select virt-handler pods.
	VirtHandlerLabel = "kubevirt.io"
	VirtHandlerValue = "virt-handler"
	// NetworksAnnotation asks Multus for a pod's extra networks; virt-operator sets it on
	// virt-handler to "<nad>@migration0" when migrations.network is set.
	NetworksAnnotation = "k8s.v1.cni.cncf.io/networks"
	// MigrationInterface is the interface name virt-handler's migration network gets.
	MigrationInterface = "migration0"
)

// MigrationNetworkOf is the KubeVirt CR's spec.configuration.migrations.network: the NAD every
// virt-handler attaches for migrations, "" when unset (migrations use the pod network) or kv is nil.
func MigrationNetworkOf(kv *kubevirtv1.KubeVirt) string {
	if kv == nil {
		return ""
	}
	if m := kv.Spec.Configuration.MigrationConfiguration; m != nil && m.Network != nil {
		return *m.Network
	}
	return ""
}

// WorkloadsNodeSelector is the KubeVirt CR's spec.workloads.nodePlacement.nodeSelector: the nodes
// virt-handler (and so every VMI) may run on; nil when unset or kv is nil.
func WorkloadsNodeSelector(kv *kubevirtv1.KubeVirt) map[string]string {
	if p := WorkloadsPlacement(kv); p != nil {
		return p.NodeSelector
	}
	return nil
}

// WorkloadsPlacement is the KubeVirt CR's spec.workloads.nodePlacement, nil when unset.
func WorkloadsPlacement(kv *kubevirtv1.KubeVirt) *kubevirtv1.NodePlacement {
	if kv == nil || kv.Spec.Workloads == nil {
		return nil
	}
	return kv.Spec.Workloads.NodePlacement
}

// KubeVirtReady reports whether the KubeVirt CR is Available with reason AllComponentsReady, and
// if not, why (the CR's own reason and message).
func KubeVirtReady(kv *kubevirtv1.KubeVirt) (bool, string) {
	if kv == nil {
		return false, "no KubeVirt CR found"
	}
	for _, c := range kv.Status.Conditions {
		if c.Type == kubevirtv1.KubeVirtConditionAvailable {
			if c.Status == corev1.ConditionTrue && c.Reason == KubeVirtReadyReason {
				return true, ""
			}
			return false, fmt.Sprintf("KubeVirt is not ready: Available=%s, %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return false, "KubeVirt is not ready: the KubeVirt CR has no Available condition yet"
}

// OldestKubeVirt is the CR in force among items (see KubeVirtCR); nil for none.
func OldestKubeVirt(items []kubevirtv1.KubeVirt) *kubevirtv1.KubeVirt {
	ptrs := make([]*kubevirtv1.KubeVirt, len(items))
	for i := range items {
		ptrs[i] = &items[i]
	}
	return OldestKubeVirtOf(ptrs)
}

// OldestKubeVirtOf is OldestKubeVirt over pointers (an informer store's objects); nil entries are
// skipped.
func OldestKubeVirtOf(kvs []*kubevirtv1.KubeVirt) *kubevirtv1.KubeVirt {
	var in *kubevirtv1.KubeVirt
	for _, kv := range kvs {
		if kv == nil {
			continue
		}
		if in == nil || kv.CreationTimestamp.Before(&in.CreationTimestamp) ||
			kv.CreationTimestamp.Equal(&in.CreationTimestamp) && strings.Compare(kv.Name, in.Name) < 0 {
			in = kv
		}
	}
	return in
}
