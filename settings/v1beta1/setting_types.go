package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Names of the settings migranet owns.
const (
	// MigrationNetwork configures the dedicated live-migration network.
	MigrationNetwork = "vm-migration-network"
	// MigrationPolicy configures which migration admission rules are enforced.
	MigrationPolicy = "migration-policy"
)

// Condition types on a Setting's status. The settings controller owns Configured, the network
// controller owns Ready and IPCapacity; each writes only its own with server-side apply.
const (
	ConditionConfigured = "Configured"
	ConditionReady      = "Ready"
	// ConditionExclusive is True while only KubeVirt's virt-handlers attach the migration network.
	ConditionExclusive  = "Exclusive"
	ConditionIPCapacity = "IPCapacity"
	// ConditionHealthy is True while every pair of attached nodes has a verified migration path
	// (the probe agents' PathReports); the path controller owns it.
	ConditionHealthy = "Healthy"
)

// Setting is a cluster-scoped configuration value, edited with `kubectl edit`. The effective value
// is Value when set, else Default.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Value",type=string,JSONPath=`.status.summary`,description="Effective value, summarised"
// +kubebuilder:printcolumn:name="Configured",type=string,JSONPath=`.status.conditions[?(@.type=="Configured")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Healthy",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="Paths",type=string,priority=1,JSONPath=`.status.paths.summary`,description="Node pairs verified / total, failing"
// +kubebuilder:printcolumn:name="IPs Used",type=string,priority=1,JSONPath=`.status.capacity.summary`,description="Addresses of the migration range held / usable, in short"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Setting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Value is the setting's value as JSON text; empty means "use Default".
	// +optional
	Value string `json:"value,omitempty"`
	// Default is the value in force when Value is empty.
	// +optional
	Default string `json:"default,omitempty"`

	// +optional
	Status SettingStatus `json:"status,omitempty"`
}

// SettingStatus reports what the controllers did with the setting.
type SettingStatus struct {
	// Conditions: Configured (settings controller), Ready and IPCapacity (network controller).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Summary is a short human-readable form of the effective value, for `kubectl get`.
	// +optional
	Summary string `json:"summary,omitempty"`
	// AppliedHash is the hash of the canonical value that was fully applied to the cluster.
	// +optional
	AppliedHash string `json:"appliedHash,omitempty"`
	// AppliedNetwork is the NetworkAttachmentDefinition the KubeVirt CR was pointed at, if any.
	// +optional
	AppliedNetwork string `json:"appliedNetwork,omitempty"`
	// Source, when set, says that the network in force is another setting's: in Harvester mode,
	// Harvester's own vm-migration-network setting decides it, and this setting's value is not
	// applied. Everything migranet does downstream (nodes, capacity, paths, admission) then works
	// from Source.Value and Source.NetworkAttachmentDefinition.
	// +optional
	Source *NetworkSource `json:"source,omitempty"`
	// WrittenHash is, in HCO mode, the hash of this setting's own value (DisabledHash for the
	// empty value) that migranet last wrote into the HyperConverged CR's network field. A value
	// whose hash differs was set after that write, so it wins over any edit of the
	// HyperConverged CR made before; while it is the same, an edit of the HyperConverged CR is
	// newer, and migranet follows it (status.source). Empty until migranet first writes.
	// +optional
	WrittenHash string `json:"writtenHash,omitempty"`
	// Nodes lists, per eligible node, its migration address or why it has none.
	// +listType=map
	// +listMapKey=name
	// +optional
	Nodes []NodeMigrationStatus `json:"nodes,omitempty"`
	// Capacity counts addresses of the migration range.
	// +optional
	Capacity *IPCapacity `json:"capacity,omitempty"`
	// Paths sums up the probe agents' results over the pairs of attached nodes.
	// +optional
	Paths *PathsStatus `json:"paths,omitempty"`
	// Ranges are the ranges (canonical CIDR) of the NetworkAttachmentDefinitions the settings
	// controller rendered from this setting, in the order first used, at most MaxRecordedRanges:
	// each is recorded before its NAD is created. The network controller deletes the empty
	// whereabouts IPPools of these ranges, never of others, once they are not the current one.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Ranges []string `json:"ranges,omitempty"`
}

// Kinds of NetworkSource: Harvester mode's, and HCO mode's when the HyperConverged CR names a
// network migranet did not write there.
const (
	SourceHarvester      = "Harvester"
	SourceHyperConverged = "HyperConverged"
)

// DisabledHash stands in status.writtenHash for the empty value (the pod network): a hash no
// value has.
const DisabledHash = "disabled"

// NetworkSource is where the migration network in force comes from when this setting's value does
// not decide it.
type NetworkSource struct {
	// Kind of source: Harvester, or HyperConverged (HCO mode).
	// +kubebuilder:validation:Enum=Harvester;HyperConverged
	Kind string `json:"kind"`
	// Setting names the object to edit instead of this one, as resource/name (namespace/name for
	// a namespaced one), e.g. settings.harvesterhci.io/vm-migration-network or
	// hyperconvergeds.hco.kubevirt.io/openshift-cnv/kubevirt-hyperconverged.
	Setting string `json:"setting"`
	// NetworkAttachmentDefinition in force, as namespace/name: the one the KubeVirt CR's
	// spec.configuration.migrations.network names; empty while migrations use the pod network.
	// +optional
	NetworkAttachmentDefinition string `json:"networkAttachmentDefinition,omitempty"`
	// Value is the network that NetworkAttachmentDefinition carries, written as a value of this
	// setting (its mtu is the NAD's, which Harvester's network controller sets from the uplink);
	// empty while migrations use the pod network.
	// +optional
	Value string `json:"value,omitempty"`
	// NotJudged says why migranet does not judge the NetworkAttachmentDefinition in force (another
	// CNI type, a plugin list, an IPAM other than whereabouts...): set only with
	// NetworkAttachmentDefinition and no Value. Migrations then run as KubeVirt runs them: migranet
	// claims no readiness or path health of that network and refuses nothing on its account.
	// +optional
	NotJudged string `json:"notJudged,omitempty"`
}

// MaxRecordedRanges bounds status.ranges: past it the oldest range is forgotten (its pool, if
// one is left, is then left too).
const MaxRecordedRanges = 64

// PathsStatus sums up the migration paths between the attached nodes, from their agents'
// PathReports. A pair is verified when both nodes' agents probed each other in a fresh round and
// neither failed; failing when a fresh report of either node lists the other; unverified
// otherwise (a new node, an agent down or stale, a network changed a moment ago).
type PathsStatus struct {
	// Pairs is the number of unordered pairs of attached nodes.
	Pairs      int32 `json:"pairs"`
	Verified   int32 `json:"verified"`
	Failing    int32 `json:"failing"`
	Unverified int32 `json:"unverified"`
	// Failures lists failing pairs, the worst nodes first, at most ten.
	// +optional
	Failures []PathFailure `json:"failures,omitempty"`
	// Summary is "<verified>/<pairs> verified", with the failing count when there are any.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// PathFailure is one failing path, as the source node's report or its peer's says.
type PathFailure struct {
	// From and To are the nodes of the direction that failed (From's report, or To's report of a
	// reply that never came back).
	From string `json:"from"`
	To   string `json:"to"`
	// Reason is Unreachable, OneWay or MTU; Message the one line that says what to check.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// NodeMigrationStatus is one eligible node's attachment to the migration network.
type NodeMigrationStatus struct {
	// Name of the node.
	Name string `json:"name"`
	// IP is the node's virt-handler migration0 address, when attached.
	// +optional
	IP string `json:"ip,omitempty"`
	// Reason says why the node is not attached (NoPod, NotRolled, NoIP, OutOfRange), empty when it is.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// IPCapacity counts the addresses of the migration range. Every count is exact however large
// the range (an IPv6 /64 has 2^64-2 usable addresses) and is written as a string of decimal
// digits (see Count); Summary is the same in short for people.
type IPCapacity struct {
	// Usable is the number of assignable addresses (range minus network, broadcast and excludes).
	Usable Count `json:"usable"`
	// Used is the number of addresses held in the range: the allocations of its whereabouts
	// IPPool (virt-handlers', other pods', leaked ones not yet released), at least those
	// virt-handler pods report.
	Used Count `json:"used"`
	// Free is Usable minus Used (0 when more are held than usable).
	Free Count `json:"free"`
	// Summary is "<used>/<usable>" in short: counts below a million in full, a count within a
	// million of a power of two as 2^k-d or 2^k+d (exact, e.g. "3/2^64-2"), others rounded
	// ("~1.84e+19").
	// +optional
	Summary string `json:"summary,omitempty"`
}

// SettingList is a list of Settings.
//
// +kubebuilder:object:root=true
type SettingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Setting `json:"items"`
}
