// Command migranet is the one binary of migranet, and each of its subcommands is a part of the
// product:
//
//   - manager (manager.go): the controllers and the admission webhooks, the Deployment's process;
//     dev (dev.go) runs the same out of cluster against a local API server;
//   - probe (probe.go): the per-node probe agent of the migranet-probe DaemonSet
//     (netcontroller/nodeagent);
//   - validate, status, preflight (validate.go, status.go with status/, preflight.go): the tools
//     an admin runs, also as `kubectl migranet`;
//   - version (version.go): this build.
//
// This package only wires: flags, clients, managers and output. What the parts do lives in
// settings (the pure rules, settings/clusterread for the reads of the cluster, settings/controller
// for the writes), netcontroller, and webhook.
package main
