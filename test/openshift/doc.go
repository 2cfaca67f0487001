// Package openshift is migranet's packaging for OpenShift Virtualization and OKD, and its checks:
//
//   - Generate writes the OLM bundle (manifests/olm: a ClusterServiceVersion with the CRDs, RBAC,
//     webhooks and the manager's Deployment, metadata/annotations.yaml) and extras.yaml (what a
//     bundle may not carry: the probe agent's DaemonSet and namespace, the admission policies, the
//     manager's Roles outside its own namespace) from kubectl kustomize of manifests/base with
//     manifests/components/openshift and manifests/components/olm (Render); `make bundle` runs it
//     (./gen), `make verify` fails on drift.
//   - The tests validate that bundle with the operator framework's own library and admit the
//     manager's and the probe agent's pods with OpenShift's own SCC code, each through a checker
//     built in the throwaway module test/tools/openshift (its modules would fight go.mod's pins).
package openshift
