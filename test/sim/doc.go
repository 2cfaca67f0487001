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
//
//   - With real node networks (NodeNetworks, package nodenet; as root), Multus stands in for
//     Multus's kubelet side only: it gives each sandbox a network namespace and runs the real
//     plugins and whereabouts (multus_real.go) — CNI ADD of each NAD's spec.config, one plugin or
//     a plugin list chained as libcni chains it (nodenet.Plugins), on sandbox creation, DEL on
//     graceful delete, none for a vanished pod; a failed ADD undone with DEL and reported with the
//     plugin's error in FailedCreatePodSandBox. What it remembers of each link (bridge or master,
//     VLAN, MTU) comes from the list's first plugin and a later tuning plugin's "mtu" (chain.go). HarvesterAgent keeps each
//     node's <cn>-br bridge and uplink (nodenetworks.go), and the virt-handler stand-in streams a
//     migration's memory over the wire (Stream). Without them, everything below is simulated.
//
//   - Multus stands in for Multus + the bridge CNI + whereabouts IPAM (multus.go, bridge.go,
//     whereabouts.go): for a scheduled pod that asks for extra networks it looks up each
//     NetworkAttachmentDefinition, runs the bridge plugin's configuration checks as
//     containernetworking/plugins v1.9.1 (the version harvester/network-controller-harvester
//     v1.8.2 requires) does in plugins/main/bridge/bridge.go loadNetConf — a VLAN outside
//     0–4094 fails the ADD with "invalid VLAN ID %d (must be between 0 and 4094)" — and
//     nothing more: ensureBridge creates a missing bridge (so a node that does not carry the
//     cluster network still attaches, to a bridge without uplink) and setupVeth takes any MTU
//     (so an MTU above the node's uplink still attaches; its full-size frames are dropped on
//     the wire, which the virt-handler stand-in models). It then allocates an address of the
//     whereabouts range as whereabouts (master, 2026-11) does — in the IPPool of that range in
//     kube-system (named by IPPoolName/normalizeRange, spec.allocations keyed by the decimal
//     offset from the range start, each {id, podref, ifname}), the lowest free offset as
//     IterateForAssignment picks it (not the network or last address, not excluded, not held),
//     written with a resourceVersion-guarded JSON patch as KubernetesIPPool.Update does, skipping an
//     address whose OverlappingRangeIPReservation names another pod and reserving the one taken
//     (overlapping ranges are on by default; IPManagementKubernetesUpdate, DEL removes both) — and
//     writes the k8s.v1.cni.cncf.io/network-status annotation (no MTU: the bridge plugin reports
//     none); kwok marks the pod Ready only then. It remembers each link (bridge, VLAN, MTU,
//     address: Multus.Link) while the sandbox lives. A failed ADD (missing NAD, invalid VLAN,
//     exhausted range: "Could not allocate IP in range: ...", whereabouts' own text) leaves the
//     pod not ready, with a FailedCreatePodSandBox event carrying the error, retried as kubelet
//     retries a failed sandbox (so is a plugin that does not answer within nodenet.PluginTimeout,
//     killed with its IPAM plugin, as the kubelet's request deadline ends a stuck sandbox's
//     creation; --runtime-request-timeout is 2 m there, the lab's plugins answer in under a
//     second); the networks attached so far are released, as Multus deletes
//     the delegates it added. An address is released only by a CNI DEL, i.e. when the pod is
//     seen terminating gracefully or finished; a pod that vanishes otherwise (force delete with
//     grace period 0, lost node) leaks its allocation, as in a real cluster. A node's cluster
//     networks are Harvester's (network-controller-harvester v1.8.2): the label
//     network.harvesterhci.io/<cn>=true that the agent sets once the bridge and uplink are up
//     (addNodeLabel after setupVLAN) and removes when they are torn down, and the uplink's MTU
//     (the VlanConfig's spec.uplink.linkAttributes.mtu, set on the bond by setUplink; default
//     1500), which no object reports per node: here the node annotation
//     uplink-mtu.sim.migranet.io/<cn> (cluster.UplinkMTUAnnotationPrefix).
//
//   - VirtHandlerStandIn is not virt-handler: it runs no domain. It makes only the writes KubeVirt
//     v1.8.4's virt-handler makes to a VirtualMachineInstance, from the side that makes them and in
//     their order, each with a kubevirt-handler token bound to the virt-handler pod of the node
//     concerned (KubeVirt's node restriction checks the node the token names): a Scheduled VMI
//     becomes Running and LiveMigratable (VirtualMachineController.updateVMIStatus and
//     updateLiveMigrationConditions, pkg/virt-handler/vm.go). For a migration the real
//     virt-controller hands off: the target advertises targetNodeAddress — its migration0 address
//     from the Multus simulator, or its pod IP without one, as FindMigrationIP
//     (pkg/virt-handler/migration.go) falls back — and targetDirectMigrationNodePorts
//     (MigrationTargetController.updateStatus, migration-target.go); the source starts the
//     migration (startTimestamp and mode, MigrationSourceController.setMigrationProgressStatus,
//     migration-source.go); the target reports targetNodeDomainDetected, and
//     targetNodeDomainReadyTimestamp once the domain runs there (in post-copy); the target takes
//     the VMI over (ackMigrationCompletion: endTimestamp, nodeName), marks it completed
//     (finalizeMigration) and drops its target label and the CreateMigrationTarget annotation
//     (finalCleanup). The source aborts when virt-controller asks (handleMigrationAbort: its stream
//     closed at once, then abortStatus Succeeded) and reports a failure alone (failed,
//     endTimestamp, failureReason, from virt-launcher's setMigrationResult); the target then drops
//     only its label (finalCleanup keeps the annotation after a failure). A VMI being deleted ends
//     Succeeded. v1.8.4 fills the decentralized migration's sourceState/targetState only for
//     decentralized migrations (their gate is off), so the stand-in writes the flat migrationState
//     fields, as virt-handler does for a local one.
//
//     Between two migration0 links the real plugins made (real node networks), a migration moves
//     its bytes (stream.go, Stream): the target listens on its migration0 address, a TCP port per
//     proxy key (0 for libvirt's connection, 49152 for the memory, 49153 for a block migration's
//     disks), as the patched migration proxy binds them (upstream v1.8.4's StartTargetListener
//     binds every address), and advertises those ports; the source dials both from its own
//     migration0 address and sends the VMI's memory (spec.domain.memory.guest, else
//     resources.requests.memory) in pre-copy rounds: each round after the first is what the guest
//     dirtied during the one before (HandlerDirtyRateAnnotation, or DirtyRate), the last one the round that fits QEMU's 300 ms downtime limit at the throughput
//     reached; writes are paced to the cap (HandlerBandwidthAnnotation or StreamBandwidth, lowered
//     by the migration's bandwidthPerMigration). The domain reached the target once it accepted the
//     memory connection; the migration completes once every round arrived. Its source runs KubeVirt
//     v1.8.4's migration monitor (monitor.go, Monitor: migrationMonitor.processInflightMigration in
//     pkg/virt-launcher/virtwrap/live-migration-source.go, every 400 ms, on the bytes the current
//     round has yet to deliver) with the options virt-handler hands it (the VMI's
//     migrationState.migrationConfiguration, which virt-controller copies from the KubeVirt CR;
//     else the CR's; KubeVirt's defaults for what is unset): no progress for more than
//     progressTimeout whole seconds aborts it ("Live migration stuck for %d seconds and has been
//     aborted"), more than completionTimeoutPerGiB × the memory in GB (rounded up) aborts it ("Live
//     migration is not completed after %d seconds and has been aborted") or, with
//     allowWorkloadDisruption, switches it to post-copy (allowPostCopy) or pauses the guest; a
//     migration in post-copy is never aborted by the monitor. A dial that fails fails the migration
//     ("Live migration failed error encountered during MigrateToURI3 libvirt api call: ..."). So a
//     narrowed uplink (full-size frames dropped) or a dropped direction stalls the stream for
//     real, and the monitor ends it. HandlerModeAnnotation=PostCopy switches a migration to
//     post-copy once the domain reached the target; HandlerHoldAnnotation=true keeps it from
//     converging (the guest dirties its memory as fast as the stream carries it) and from
//     completing. What the virt-handlers would report of it is served in Prometheus' text format
//     (handlermetrics.go, ServeHTTP; env.Env.HandlerMetricsURL): every running VMI's
//     kubevirt_vmi_dirty_rate_bytes_per_second (the rate it is scripted to dirty at) and a
//     streaming migration's kubevirt_vmi_migration_* bytes, rates and dirty rate. KubeVirt v1.9.0's migrationState has no field for the bytes moved (the patched
//     virt-handler exports them as kubevirt_vmi_migration_proxy_transferred_bytes_total, patch
//     0003), so the stream's counts stay in the stand-in (Stream.Report) and its log.
//
//     Where no bytes can move — simulated node networks, a target without migration0 (the pod
//     network), links whose VLAN tags are simulated and differ — the stand-in judges the path
//     from a model instead (path.go, MigrationPath; WirePath probes what it can) and ends the
//     migration after MigrationTime: it fails at once when the source cannot reach the target's
//     address (no migration0 on the source, different bridges or VLANs, an address outside its
//     subnet, a node that does not carry the cluster network: "Live migration failed ..."), after
//     MigrationTime when full-size frames would be dropped on an uplink with a smaller MTU ("Live
//     migration stuck for 150 seconds and has been aborted"), and completes otherwise.
//
//   - HarvesterMigrationNetwork stands in for Harvester v1.8.2's own vm-migration-network
//     controller (harvester.go; the facts in docs/harvester.md), for a Harvester mode to be tested
//     against: it watches Harvester's cluster-scoped Setting vm-migration-network (harvesterhci.io
//     v1beta1, unstructured) and, as OnVMMigrationNetworkChange
//     (pkg/controller/master/kubevirt/vm_migration_network.go) does, skips a Setting being deleted,
//     one with no annotations and an empty value (first start), and one whose value's SHA-1 (of the
//     string as typed) equals its vm-migration-network.settings.harvesterhci.io/hash annotation
//     (checkIsSameHashValue). Otherwise it reads the KubeVirt CR first (missing: GetKubeVirtError,
//     nothing else done); finds the NAD in the CR's namespace labelled with the value's hash or
//     creates one (findOrCreateNad, createNad): generateName vm-migration-network-, that label, the
//     annotation vm-migration-network.settings.harvesterhci.io: "true", and the bridge config of
//     CreateBridgeConfig (pkg/util/network/common.go: cniVersion 0.3.1, bridge <cn>-br, promiscMode,
//     the VLAN with 0 written as 1, whereabouts range and exclude, exclude left out when empty; a
//     value that does not decode is CreateNadError); sets spec.configuration.migrations.network to
//     the NAD's name, nil for an empty value (rollback; the default is not read), and writes the
//     whole CR with an Update when the configuration changed (UpdateKubeVirtError); deletes the NAD
//     the Setting's net-attach-def annotation names unless it is the one in force (removeOldNad;
//     RemoveOldNadError); and records the outcome in one Update of the Setting, which has no status
//     subresource (setConfiguredCondition): the hash and net-attach-def annotations (the old NAD on
//     failure) and the configured condition as wrangler v3.2.4's pkg/condition sets it, True with
//     no reason or message, or False with the reason and "<step> error <error>" — lastUpdateTime
//     renewed when status or message change, lastTransitionTime never written. A failure stores the
//     new hash too, so it is not retried until the value changes. It also plays Harvester's network
//     controller (v1.6.0-rc3, the version Harvester v1.8.2 builds against) on that NAD: its
//     webhook's patchMTU (pkg/webhook/nad/mutator.go) puts "mtu" last in the config when the uplink's
//     MTU is not 1500 — the ClusterNetwork's network.harvesterhci.io/uplink-mtu annotation, else the
//     first VlanConfig of the cluster network's spec.uplink.linkAttributes.mtu — and refuses the
//     create (CreateNadError) for a cluster network without a ClusterNetwork object, mgmt included;
//     its manager's ensureLabels (pkg/controller/manager/nad/controller.go) then labels the NAD,
//     asynchronously as there: network.harvesterhci.io/type L2VlanNetwork, vlan-id, clusternetwork,
//     and ready from the ClusterNetwork's ready condition ("false" unless True). EnsureHarvesterSetting,
//     SetHarvesterValue and EnsureClusterNetwork write those objects as Harvester and an admin do.
//
//   - Service stands in for a Kubernetes Service in front of migranet's replicas (endpoints
//     controller + kube-proxy in iptables mode; see service.go).
package sim
