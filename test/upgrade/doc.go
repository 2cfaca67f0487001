// Package upgrade tries the upgrade an admin runs: on a real local control plane it installs the
// manifests of the previous release (the newest release CHANGELOG.md names with its commit; while
// that release's manifests are the current ones, the newest commit before it whose manifests
// differ, as issue #39 asks), creates the settings and a PathReport the old release would hold,
// then applies the current manifests with the same `kubectl apply --server-side`. It checks that
// the apply succeeds, the settings, their status and the PathReport survive in place, every object
// ends up as the current manifests say (and a second apply changes nothing), no webhook or
// workload is duplicated, the Deployment and the probe DaemonSet roll to the new image, and every
// object the previous release installed and the current one does not is left, and named in the
// CHANGELOG (server-side apply prunes nothing).
package upgrade
