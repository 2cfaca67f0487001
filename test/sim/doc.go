// Package sim holds simulators for the two components that cannot run in the local cluster,
// each following its real counterpart's documented behaviour as far as migranet can observe it:
//
//   - VirtOperator stands in for KubeVirt's virt-operator: it keeps the virt-handler DaemonSet in
//     the KubeVirt namespace in line with the KubeVirt CR (node placement, and the
//     k8s.v1.cni.cncf.io/networks annotation <nad>@migration0 when
//     spec.configuration.migrations.network is set, which makes the real DaemonSet controller roll
//     every virt-handler pod), and owns the CR's Available/Progressing/Degraded conditions:
//     Available with reason AllComponentsReady once every virt-handler pod is updated and ready,
//     DeploymentInProgress while they roll.
//   - Multus stands in for Multus + the bridge CNI + whereabouts IPAM: for a scheduled pod that
//     asks for extra networks it looks up each NetworkAttachmentDefinition, allocates the lowest
//     free address of its whereabouts range (minus excludes, network and broadcast) and writes the
//     k8s.v1.cni.cncf.io/network-status annotation; kwok marks the pod Ready only then. A missing
//     NAD leaves the pod not ready, with a FailedCreatePodSandBox event, and is retried, as
//     kubelet retries a failed sandbox.
package sim
