package settings

import (
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// MigrationCreator is who created vmim, as far as the cluster records it: KubeVirt stores no
// creator, but marks the migrations its own virt-controller (service account kubevirt-controller
// in kubevirtNamespace) creates for a node drain (EvacuationMigrationAnnotation) and for a
// workload update (WorkloadUpdateMigrationAnnotation). Any other migration's creator is unknown
// (""), and no exemptUsers entry matches it. The runningPathHealthy rule's exemptUsers therefore
// apply to virt-controller's migrations only; see docs/settings-and-admission.md.
func MigrationCreator(vmim *kubevirtv1.VirtualMachineInstanceMigration, kubevirtNamespace string) string {
	if vmim == nil {
		return ""
	}
	_, evac := vmim.Annotations[kubevirtv1.EvacuationMigrationAnnotation]
	_, update := vmim.Annotations[kubevirtv1.WorkloadUpdateMigrationAnnotation]
	if evac || update {
		return serviceAccountPrefix + kubevirtNamespace + ":" + VirtControllerServiceAccount
	}
	return ""
}

// VirtControllerServiceAccount is the service account KubeVirt's virt-controller runs as.
const VirtControllerServiceAccount = "kubevirt-controller"
