// Package rolling upgrades a running migranet the way a cluster does it: the previous release
// (test/upgrade.PreviousRelease: its binary and manifests, built from its commit) runs on the
// local cluster with the real KubeVirt components, real node networks and probe agents, the
// migration network Ready and Healthy; then the current release's manifests are applied, the
// manager replicas are replaced one at a time as the Deployment's rollout does (maxSurge 1,
// maxUnavailable 0), and kube-controller-manager rolls the probe DaemonSet to the new image
// (whose pods run the new binary). Through it, a storm of migration creates (server-side dry
// runs and real migrations that virt-controller drives), a pod asking for the migration network
// and an invalid setting value keep being sent, and the setting's conditions are read every
// quarter second. The same is then done back to the previous release (the downgrade).
package rolling
