package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Reasons a PeerPath gives for a failing path.
const (
	// PathUnreachable: no reply to small probes, and nothing from the peer arrives either.
	PathUnreachable = "Unreachable"
	// PathOneWay: the peer's own probes arrive here, but nothing sent from here reaches the peer.
	PathOneWay = "OneWay"
	// PathMTU: small probes cross, full-size (the network's MTU) Don't-Fragment frames do not.
	PathMTU = "MTU"
)

// Problems a PathReport gives when its agent cannot probe at all.
const (
	// ProbeNoVirtHandler: no running virt-handler pod on the node.
	ProbeNoVirtHandler = "NoVirtHandler"
	// ProbeNotAttached: the virt-handler pod reports no migration0 address on the network.
	ProbeNotAttached = "NotAttached"
	// ProbeNoNamespace: no process of the virt-handler pod was found, so neither was its network
	// namespace (the agent needs hostPID).
	ProbeNoNamespace = "NoNamespace"
	// ProbeNoInterface: the virt-handler pod's network namespace has no migration0 holding the
	// address its network-status reports.
	ProbeNoInterface = "NoInterface"
	// ProbeSocket: the probe socket could not be opened on migration0.
	ProbeSocket = "SocketFailed"
	// ProbeNeighbourTableFull: the node's neighbour table overflowed (its gc_thresh3) while the
	// round ran and some peers did not answer: the kernel may have dropped the probes for want of
	// an entry, so the round's failures are not reported as the paths' (nor are its passes: the
	// report's lastRound says only that the round ran, no failing peer is listed).
	// NeighbourTable says how full the table is.
	ProbeNeighbourTableFull = "NeighbourTableFull"
	// ProbeNotMeasured is never written by an agent on a real cluster: the local cluster's
	// stand-in of the agent writes it where the nodes' networks are simulated (make dev without
	// network namespaces), so statuses say the paths are not measured rather than blame an agent.
	ProbeNotMeasured = "NotMeasured"
	// ProbeVirtHandlerReplaced is never written by an agent: migranet reads a report as having it
	// while the virt-handler pod it names is no longer the node's (replaced, the agent's next
	// round not yet reported), so results of a gone pod's interface judge nothing.
	ProbeVirtHandlerReplaced = "VirtHandlerReplaced"
)

// PathReport is what one node's probe agent (`migranet probe`) found about the migration
// network's paths from that node to every other attached node. It is named after the node, owned
// by the Node (it goes with it), and written only by that node's agent (a ValidatingAdmissionPolicy
// checks the writer's node). It holds only the failing peers: nothing in it grows with the number
// of healthy pairs.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mpr
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.address`
// +kubebuilder:printcolumn:name="Peers",type=integer,JSONPath=`.lastRound.peers`
// +kubebuilder:printcolumn:name="Failing",type=integer,JSONPath=`.lastRound.failing`
// +kubebuilder:printcolumn:name="Problem",type=string,JSONPath=`.problem`
// +kubebuilder:printcolumn:name="Round",type=date,JSONPath=`.lastRound.completed`,description="When the last full round ended"
// +kubebuilder:printcolumn:name="Network",type=string,priority=1,JSONPath=`.network`
type PathReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Network is the NetworkAttachmentDefinition (namespace/name) the probes ran on. Results of
	// another network never judge the current one.
	Network string `json:"network"`
	// Address is the node's migration0 address the probes leave from; empty when the agent found
	// none (see Problem).
	// +optional
	Address string `json:"address,omitempty"`
	// VirtHandlerUID is the UID of the virt-handler pod whose migration0 the probes leave from.
	// +optional
	VirtHandlerUID types.UID `json:"virtHandlerUID,omitempty"`
	// Port is the UDP port the agent answers probes on.
	// +optional
	Port int32 `json:"port,omitempty"`
	// MTU is the frame size the full-size probes fill: the network's configured MTU.
	// +optional
	MTU int32 `json:"mtu,omitempty"`
	// Problem says why the agent cannot probe (NoVirtHandler, NotAttached, NoNamespace,
	// NoInterface, SocketFailed) or cannot trust its last round (NeighbourTableFull); empty while
	// it probes.
	// +optional
	Problem string `json:"problem,omitempty"`
	// Message explains Problem.
	// +optional
	Message string `json:"message,omitempty"`
	// AgentVersion is the agent's build.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`
	// IntervalSeconds is the time between the starts of the agent's rounds: its --interval, or
	// longer when its probe rate limit (--max-rate) stretches a round over many peers. Once three
	// intervals pass without a finished round its results are stale and its node is AgentSilent.
	IntervalSeconds int32 `json:"intervalSeconds"`
	// Since is when the agent began probing Network from Address: a peer's round that started
	// before it has not probed this node yet.
	Since metav1.MicroTime `json:"since"`
	// LastRound is the last completed round over every peer; nil before the first.
	// +optional
	LastRound *ProbeRound `json:"lastRound,omitempty"`
	// Failing lists the peers whose path from this node failed in the last round, by node name.
	// +listType=map
	// +listMapKey=node
	// +optional
	Failing []PeerPath `json:"failing,omitempty"`
	// NeighbourTable is the node's neighbour table (ARP or NDP, of the network's family) as the
	// last round found it: one table per kernel, shared by every pod on the node, which the
	// probes add to. Nil when the agent could not read it.
	// +optional
	NeighbourTable *NeighbourTable `json:"neighbourTable,omitempty"`
	// Migration is the node's migration traffic on migration0 during the last round and the
	// budget the agent shapes it to; nil when the agent has no migration0 to read.
	// +optional
	Migration *MigrationTraffic `json:"migration,omitempty"`
}

// States of MigrationTraffic.Shaping.
const (
	// ShapingOff: no budget applies to the node; nothing is shaped.
	ShapingOff = "Off"
	// ShapingEnforced: migration0 is shaped to the budget in both directions.
	ShapingEnforced = "Enforced"
	// ShapingFailed: a budget applies but could not be installed (Message says why); the
	// node's migration traffic is not bounded.
	ShapingFailed = "Failed"
)

// MigrationTraffic is what crossed a node's migration0 (every migration byte of the node, in and
// out, and the probes) and the budget the agent shapes it to.
type MigrationTraffic struct {
	// BudgetBytesPerSecond is the node's budget, bytes a second in each direction; 0 when none
	// applies.
	// +optional
	BudgetBytesPerSecond int64 `json:"budgetBytesPerSecond,omitempty"`
	// Override is the selector (k=v,...) of the budget's nodes entry that gave the node its
	// budget; empty for the budget's own.
	// +optional
	Override string `json:"override,omitempty"`
	// Shaping is Off, Enforced or Failed.
	Shaping string `json:"shaping"`
	// Message says why shaping Failed.
	// +optional
	Message string `json:"message,omitempty"`
	// Queue is the migrations' queue while Enforced: fq_codel, or bfifo on a kernel without it.
	// +optional
	Queue string `json:"queue,omitempty"`
	// Since is when the budget in force was installed (or removed).
	// +optional
	Since *metav1.MicroTime `json:"since,omitempty"`
	// WindowSeconds is how long the rates below were measured over (the last round).
	// +optional
	WindowSeconds int32 `json:"windowSeconds,omitempty"`
	// InBytesPerSecond and OutBytesPerSecond are the average rates migration0 received and sent
	// over the window; PeakIn and PeakOut the highest over one second of it.
	// +optional
	InBytesPerSecond int64 `json:"inBytesPerSecond,omitempty"`
	// +optional
	OutBytesPerSecond int64 `json:"outBytesPerSecond,omitempty"`
	// +optional
	PeakInBytesPerSecond int64 `json:"peakInBytesPerSecond,omitempty"`
	// +optional
	PeakOutBytesPerSecond int64 `json:"peakOutBytesPerSecond,omitempty"`
	// HeldIn and HeldOut count the times the budget held a migration packet back during the
	// window (the budget binding), in each direction.
	// +optional
	HeldIn int64 `json:"heldIn,omitempty"`
	// +optional
	HeldOut int64 `json:"heldOut,omitempty"`
}

// NeighbourTable is the node's neighbour table of one family and the probe agent's use of it.
type NeighbourTable struct {
	// Family is IPv4 (ARP) or IPv6 (NDP).
	Family string `json:"family"`
	// GCThresh1, GCThresh2 and GCThresh3 are the node's net.ipv{4,6}.neigh.default.gc_thresh1/2/3
	// (0 when they could not be read): above gc_thresh2 the kernel collects entries in use, at
	// gc_thresh3 it makes no new one.
	// +optional
	GCThresh1 int32 `json:"gcThresh1,omitempty"`
	// +optional
	GCThresh2 int32 `json:"gcThresh2,omitempty"`
	// +optional
	GCThresh3 int32 `json:"gcThresh3,omitempty"`
	// Budget is the agent's share of the table: gc_thresh2 / 4 entries.
	// +optional
	Budget int32 `json:"budget,omitempty"`
	// Peers is the number of peers the agent probes.
	Peers int32 `json:"peers"`
	// Entries is the most neighbour entries the agent's probes held at once in the last round
	// (at most one per peer).
	Entries int32 `json:"entries"`
	// RemovesEntries says whether the agent removes the entries its probes made once it is done
	// with a peer (it needs CAP_NET_ADMIN); without, it holds one entry per peer.
	RemovesEntries bool `json:"removesEntries"`
	// TableEntries is the number of entries in the node's table, every namespace together.
	// +optional
	TableEntries int64 `json:"tableEntries,omitempty"`
	// Overflows counts the new entries the kernel refused during the last round for want of room
	// (its table_fulls counter; "neighbor table overflow!" in the kernel log).
	// +optional
	Overflows int64 `json:"overflows,omitempty"`
	// Message is set when the node's limits cannot hold the agent's probing of this network's
	// size (the agent's entries exceed its budget), or the table overflowed: what to raise.
	// +optional
	Message string `json:"message,omitempty"`
}

// ProbeRound is one completed round of probes over every peer.
type ProbeRound struct {
	// Started and Completed bound the round.
	Started   metav1.MicroTime `json:"started"`
	Completed metav1.MicroTime `json:"completed"`
	// Peers probed, and how many of them failed.
	Peers   int32 `json:"peers"`
	Failing int32 `json:"failing"`
	// MedianRTTMicros and MaxRTTMicros are the small probes' round-trip times over the peers that
	// answered, in microseconds; MaxRTTNode is the peer of the maximum.
	// +optional
	MedianRTTMicros int64 `json:"medianRTTMicros,omitempty"`
	// +optional
	MaxRTTMicros int64 `json:"maxRTTMicros,omitempty"`
	// +optional
	MaxRTTNode string `json:"maxRTTNode,omitempty"`
}

// PeerPath is one failing path from the report's node to a peer.
type PeerPath struct {
	// Node is the peer.
	Node string `json:"node"`
	// Address is the peer's migration0 address probed.
	Address string `json:"address"`
	// Reason is Unreachable, OneWay or MTU.
	Reason string `json:"reason"`
	// Largest is, for MTU, the largest frame (IP packet bytes) that crossed; 0 when none did.
	// +optional
	Largest int32 `json:"largest,omitempty"`
	// Message says what failed, in one line.
	// +optional
	Message string `json:"message,omitempty"`
	// Since is when the probe that first found this failure was sent; kept while the reason
	// stays (this run of failures).
	// +optional
	Since *metav1.MicroTime `json:"since,omitempty"`
	// AfterCheck says the agent had checked this peer at this address before, within the silence
	// bound (three intervals), and found it passing or failing otherwise: the failure began after
	// that check. A round that left the peer out (its agent not Ready then) does not undo it.
	// False when the first check of the peer (the agent's, or since the peer came back from an
	// absence longer than the bound) found it failing: its beginning is not known.
	// +optional
	AfterCheck bool `json:"afterCheck,omitempty"`
}

// PathReportList is a list of PathReports.
//
// +kubebuilder:object:root=true
type PathReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PathReport `json:"items"`
}
