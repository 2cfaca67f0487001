// Package sim holds simulators for the components that cannot run in the local cluster, each
// following its real counterpart's behaviour as far as it shows in the API:
//
//   - VirtOperator stands in for KubeVirt's virt-operator: it keeps the virt-handler DaemonSet in
//     the KubeVirt namespace in line with the KubeVirt CR (node placement, and the
//     k8s.v1.cni.cncf.io/networks annotation <nad>@migration0 when
//     spec.configuration.migrations.network is set, which makes the real DaemonSet controller roll
//     every virt-handler pod), and owns the CR's Available/Progressing/Degraded conditions:
//     as KubeVirt v1.8.4's syncInstallation does (SyncConditions): DeploymentInProgress
//     (Available=False) on a first install, UpdateInProgress (Available, Progressing and
//     Degraded all True) while a changed configuration rolls virt-handler, AllComponentsReady once
//     every virt-handler pod is updated and ready; targetDeploymentID / observedDeploymentID
//     follow the rendered template.
//   - Multus stands in for Multus + the bridge CNI + whereabouts IPAM: for a scheduled pod that
//     asks for extra networks it looks up each NetworkAttachmentDefinition, allocates an address
//     of its whereabouts range as whereabouts does — in the IPPool of that range in kube-system
//     (named by IPPoolName/normalizeRange, spec.allocations keyed by the decimal offset from the
//     range start, each {id, podref, ifname}), the lowest free offset as IterateForAssignment
//     picks it (not the network or last address, not excluded, not held), written with a
//     resourceVersion-guarded JSON patch as KubernetesIPPool.Update does — and writes the
//     k8s.v1.cni.cncf.io/network-status annotation; kwok marks the pod Ready only then. A missing
//     NAD or an exhausted range ("Could not allocate IP in range: ...", whereabouts' own text)
//     leaves the pod not ready, with a FailedCreatePodSandBox event, and is retried, as kubelet
//     retries a failed sandbox. An address is released only by a CNI DEL, i.e. when the pod is
//     seen terminating gracefully or finished; a pod that vanishes otherwise (force delete with
//     grace period 0, lost node) leaks its allocation, as in a real cluster.
//   - VirtHandlerStandIn is not virt-handler: it runs no domain and moves no bytes. It makes only
//     the writes KubeVirt v1.8.4's virt-handler makes to a VirtualMachineInstance, in their order,
//     each with a kubevirt-handler token bound to the virt-handler pod of the node concerned
//     (KubeVirt's node restriction checks the node the token names): a Scheduled VMI becomes
//     Running and LiveMigratable (VirtualMachineController.updateVMIStatus and
//     updateLiveMigrationConditions, pkg/virt-handler/vm.go); for a migration the real
//     virt-controller hands off, the target advertises its migration0 address from the Multus
//     simulator (the pod IP without a migration network) and proxy ports
//     (MigrationTargetController.updateStatus, migration-target.go), the source starts the
//     migration (pre-copy, or post-copy when the VMIM or the VMI is annotated
//     HandlerModeAnnotation=PostCopy) or aborts it when virt-controller asks
//     (MigrationSourceController.setMigrationProgressStatus and handleMigrationAbort,
//     migration-source.go), the target reports the domain detected, and ready in post-copy
//     (updateStatus), takes the VMI over after MigrationTime unless HandlerHoldAnnotation=true
//     (ackMigrationCompletion), marks it completed (finalizeMigration) and drops its target label
//     (finalCleanup); a VMI being deleted ends Succeeded. v1.8.4 fills the decentralized
//     migration's sourceState/targetState only for decentralized migrations (their gate is off),
//     so the stand-in writes the flat migrationState fields, as virt-handler does for a local one.
package sim
