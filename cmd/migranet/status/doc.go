// Package status is the model behind `migranet status`: it combines a
// VirtualMachineInstanceMigration (VMIM) with its VirtualMachineInstance's status.migrationState
// into one row, the way oVirt's engine shows one migration from the source and destination VDSM
// reports; it summarises the vm-migration-network Setting into one header line; and it renders
// both as an aligned table or as JSON, once or as a stream of changes (`-w`). It reads no cluster:
// cmd/migranet fetches the objects and hands them in.
//
// # Which migration state is used
//
// The VMI's status.migrationState describes the VMI's latest migration only; it is used when its
// migrationUid is the VMIM's UID. Otherwise the VMIM's own status.migrationState (KubeVirt copies
// it there) is used, if present. Neither: the migration has not started.
//
// # One migration's story
//
// Explain tells one migration (`migranet status -n NS NAME`) from a Story, and every event in it
// counts only for the migration it is about (storyevents.go): an event on the migration by its
// involvedObject's UID, one migranet left on the VMI by its annotations (migranet.io/migration and
// migranet.io/migration-uid; one without a UID, from before events carried one, when seen no
// earlier than the migration's creation second). While the VMIM exists the story is its; once it is
// gone, the story is of the UID seen last in the events. A refused migration was never stored and
// has no UID: its refusal is the story only while no VMIM of the name exists and when seen after
// the creation of the latest admitted one of that name. The migration's state is the VMI's while
// it names the UID, else the VMIM's copy, else the one migranet recorded on its path-abort events
// (migranet.io/migration-state): what is left once the VMIM is gone and the VMI has moved on, for
// as long as events live (kube-apiserver's --event-ttl, an hour by default). The abort annotation
// counts only on a VMIM being deleted (health.AbortedBy).
//
// # Combined state
//
// Rules are tried top to bottom; the first that matches gives the STATE column ("state: reason"
// when there is a reason). "state" below is the chosen migrationState.
//
//	VMIM / VMI                                              STATE
//	VMIM phase Succeeded                                    completed
//	VMIM phase Failed, and abortStatus Succeeded, or an
//	  abort requested whose abortStatus is not Failed       cancelled
//	VMIM phase Failed                                       failed: <state.failureReason, else the message
//	                                                          of a True VMIM condition, else
//	                                                          "no reason reported">
//	VMIM being deleted (cancel = delete)                    cancelling: migration deleted
//	VMI not found                                           vmi missing: VirtualMachineInstance <name> not found
//	state.abortStatus Succeeded (VMIM not Failed yet)       cancelled
//	state.abortStatus Failed                                cancel failed: still <migrating, post-copy or paused>
//	state.abortRequested, abortStatus Aborting, or VMIM
//	  condition migrationAbortRequested True                cancelling
//	state.failed (VMIM not Failed yet)                      failing: <failureReason, else "no reason reported">
//	state.completed, target domain ready                    completing
//	state.completed, target domain not ready yet            completing: waiting for the target
//	target domain ready, not completed, mode not PostCopy   completing: waiting for the source
//	VMIM phase Running, or state.startTimestamp set:
//	  mode PostCopy                                         post-copy
//	  mode Paused                                           paused
//	  otherwise                                             migrating
//	VMIM phase "" or Pending                                pending[: <message of a True blocking condition>]
//	VMIM phase Scheduling                                   scheduling[: …]
//	VMIM phase Scheduled                                    scheduled[: …]
//	VMIM phase PreparingTarget                              preparing target[: …]
//	VMIM phase TargetReady                                  target ready[: …]
//	VMIM phase WaitingForSync                               waiting for sync[: …]
//	VMIM phase Synchronizing                                synchronizing[: …]
//	any other phase                                         unknown: phase <phase>
//
// "Target domain ready" is state.targetNodeDomainReadyTimestamp or targetState.domainReadyTimestamp.
// A blocking condition is a True VMIM condition such as migrationRejectedByResourceQuota.
// In watch mode a VMIM that disappears gets one last row with STATE "deleted".
//
// # Columns
//
// NAMESPACE (only with -A), NAME (the VMIM), VMI, NODES ("source → target"; "?" for a node not
// known yet; while in flight the source is the VMI's node until the migration state names one),
// PHASE (the VMIM's phase, <none> when unset), MODE (pre-copy, post-copy, paused, <none>), NETWORK
// (pod or migration: state.migrationNetworkType when KubeVirt reports it; KubeVirt v1.9.0's
// virt-handler leaves it empty, so InferNetwork judges it from state.targetNodeAddress, the
// address the target listens on (virt-handler's migration0 address when it has one): inside the
// range of the migration network in force, migration, else pod — for a finished migration only
// when KubeVirt configured it with the network in force (state.migrationConfiguration.network);
// <none> before the target has an address, or for a migration of an earlier network), ELAPSED (from
// state.startTimestamp, else the VMIM's creation, to state.endTimestamp, else the final phase's
// transition time, else now; kubectl's duration style: 45s, 3m12s, 2d3h; <unknown> when a
// finished migration carries no end time), STATE (above).
//
// Rows are sorted in-flight first, then by creation time, then namespace and name.
//
// # JSON
//
// `-o json` prints one object: {"network": Network, "migrations": [Row, …]}. With -w every line is
// one event object: {"type":"network","network":Network} or {"type":"migration","migration":Row};
// the first lines describe everything, later lines only what changed.
//
// Row fields: namespace, name, vmi, vmiFound (bool), sourceNode, targetNode (""
// when unknown), phase (the VMIM's phase as KubeVirt spells it), mode (PreCopy, PostCopy, Paused
// or ""), network (Pod, Migration or ""), networkSource ("reported" by KubeVirt, judged from the
// "address", or ""), targetAddress (state.targetNodeAddress, or ""), configuredNAD
// (state.migrationConfiguration.network: the migration network's NAD KubeVirt configured the
// migration with, "" for the pod network or when not reported), state (the words of the table above, before any colon),
// reason (after the colon, or ""), inFlight (bool: the VMIM is neither Succeeded nor Failed),
// created, started, ended (RFC 3339; started and ended are null when unknown), elapsedSeconds
// (whole seconds, null when unknown).
//
// Network fields: setting (its name), mode ("pod", "migration" or "unknown"), nad (the
// NetworkAttachmentDefinition the value renders to), applied (bool: the KubeVirt CR points at
// it), summary (the value in short, as in `kubectl get settings`), range, ready ("True", "False"
// or "Unknown", the Ready condition), reason and message (of Ready, or why the setting could not
// be read), nodesAttached, nodesEligible, ipsUsed, ipsUsable (exact integers of any size, null
// when not reported).
package status
