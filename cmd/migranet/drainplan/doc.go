// Package drainplan is the model behind `migranet preflight --drain NODE`: what a node drain would do
// to every VirtualMachineInstance on the node, before it starts, and how it goes while it runs.
// It reads no cluster: cmd/migranet gathers the objects and the admission engine's answers
// (webhook/migrationcheck: GatherCreate, EvaluateCreate, TargetNodes, Steer — the code admission
// and the steering webhook run) and hands them in.
//
//   - verdict.go: moves, stops, blocks or waits, in KubeVirt's words (evictionStrategy as
//     virt-api's pod eviction admitter reads it, the LiveMigratable and StorageLiveMigratable
//     conditions, host devices) and migranet's admission's (feasibleTarget, pathHealthy).
//   - choose.go: the node kube-scheduler's default profile would pick among the nodes admission
//     says can take the target pod, the steering's preferred terms included.
//   - eta.go: one migration's time from the guest memory, its dirty rate and the path's
//     throughput: QEMU's pre-copy rounds, auto-converge, and KubeVirt's migration monitor
//     (completion timeout, post-copy or pause with allowWorkloadDisruption, abort).
//   - throughput.go: the path's throughput and the overheads from migrations that ran (VMIM and
//     VMI status timestamps), from metrics KubeVirt reports, else bandwidthPerMigration, else a
//     stated default — each figure says where it came from.
//   - schedule.go: the drain as KubeVirt's evacuation controller runs it (parallelOutbound-
//     MigrationsPerNode, parallelMigrationsPerCluster, an inbound limit per node where one is
//     configured), simulated over the orders KubeVirt may take the VMIs in.
//   - plan.go, render.go: the plan and its table; progress.go: the drain against its plan.
package drainplan
