// Package targetpod derives, from a VirtualMachineInstance and the VirtualMachineInstanceMigration
// that moves it, the scheduling constraints of the migration target pod that KubeVirt v1.8.4's
// virt-controller will create, without creating it. It follows, at v1.8.4:
//
//   - pkg/virt-controller/watch/migration/migration.go: createTargetPod (spec.addedNodeSelector
//     merged under the rendered node selector, the host-model CPU labels, the CPU vendor label),
//     createMigrationPodAntiAffinityRule (no node already running a pod of the VMI),
//     prepareNodeSelectorForHostCpuModel and getHostCpuModelFromMap, getCPUVendorLabelKey;
//   - pkg/virt-controller/services/template.go: renderLaunchManifest (the VMI's tolerations,
//     affinity and topology spread constraints carried over), newNodeSelectorRenderer, and
//     setNodeAffinityForHostModelCpuModel / setNodeAffinityForbiddenFeaturePolicy /
//     modifyNodeAffintyToRejectLabel (DoesNotExist terms added to every required term);
//   - pkg/virt-controller/services/nodeselectorrenderer.go: NewNodeSelectorRenderer and Render
//     (kubevirt.io/schedulable, the architecture, the cluster-wide developerConfiguration
//     nodeSelectors, the VMI's nodeSelector, dedicated CPUs, CPU model and feature labels, machine
//     type, realtime).
//
// What the target pod requests is not re-derived: renderLaunchManifest renders it from the same VMI
// for the source pod, so the source virt-launcher pod's requests are the target's.
//
// Constraints KubeVirt adds that this package does not render (Hyper-V strict-check labels, the TSC
// frequency label, launch-security labels of VMIs that cannot live-migrate) and the VMI's own
// inter-pod affinity and topology spread are listed in Constraints.NotEvaluated, so the caller can
// admit and say so rather than guess.
package targetpod
