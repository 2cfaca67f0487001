// Package kubevirt is the Ginkgo suite that runs migranet beside KubeVirt's own virt-api and
// virt-controller (release cluster.KubeVirtVersion, built from the module proxy), with the
// virt-handler stand-in from test/sim: every migration here crosses KubeVirt's admission and is
// driven by KubeVirt's migration controller, and migranet's refusals and KubeVirt's reach the user
// side by side. Migrations the migration network cannot carry (pathfailure_test.go) fail there as
// KubeVirt reports them, through the stand-in, so migranet's refusals are checked against what
// would happen. At the end of the suite the audit log shows that RBAC refused none of migranet's
// requests on the paths KubeVirt's components drive. The test/integration suite keeps KubeVirt
// simulated, for specs that write KubeVirt's statuses themselves.
package kubevirt
