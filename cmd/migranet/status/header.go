package status

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Modes of the migration network.
const (
	ModePod       = "pod"
	ModeMigration = "migration"
	ModeUnknown   = "unknown"
	// ModeNotJudged: a NAD migranet does not judge is in force (status.source.notJudged).
	ModeNotJudged = "notJudged"
)

// Reasons of a Network whose Setting could not be read, and of one without a Ready condition.
const (
	ReasonNotFound  = "NotFound"
	ReasonNoStatus  = "NoStatus"
	ReasonForbidden = "Forbidden"
	ReasonNoAPI     = "NotInstalled"
	ReasonError     = "Error"
)

// Network is the header: the state of the vm-migration-network Setting. JSON names are part of the
// CLI's interface.
type Network struct {
	Setting string `json:"setting"`
	// Source names the object that decides the network when it is not Setting (Harvester mode:
	// settings.harvesterhci.io/vm-migration-network; HCO mode, while the HyperConverged CR
	// decides: hyperconvergeds.hco.kubevirt.io/<namespace>/kubevirt-hyperconverged); empty
	// otherwise. SourceKind is status.source.kind (Harvester, HyperConverged).
	Source     string `json:"source,omitempty"`
	SourceKind string `json:"sourceKind,omitempty"`
	Mode       string `json:"mode"`
	NAD        string `json:"nad"`
	Applied    bool   `json:"applied"`
	Summary    string `json:"summary"`
	Range      string `json:"range"`
	// rangePrefix is Range as the setting's typed value holds it (InferNetwork reads it).
	rangePrefix   netip.Prefix
	Ready         string `json:"ready"`
	Reason        string `json:"reason"`
	Message       string `json:"message"`
	NodesAttached int    `json:"nodesAttached"`
	NodesEligible int    `json:"nodesEligible"`
	// IPsUsed and IPsUsable are exact JSON integers of any size (an IPv6 /64 has 2^64-2 usable
	// addresses; decode them into a big integer or json.Number, not a float64).
	IPsUsed   *json.Number `json:"ipsUsed"`
	IPsUsable *json.Number `json:"ipsUsable"`
	// Foreign says which objects besides virt-handlers attach the migration network (the
	// Setting's Exclusive=False message); empty when none do.
	Foreign string `json:"foreign,omitempty"`
	// Paths is the migration paths' health (condition Healthy and status.paths); absent while the
	// setting has neither (no migration network, or no path writer yet).
	Paths *Paths `json:"paths,omitempty"`
	// Budget sums up the nodes' migration budgets as their probe agents report them; absent
	// when no node has one (or the reports could not be read).
	Budget *BudgetSummary `json:"budget,omitempty"`
}

// Paths is the migration paths between attached nodes as the probe agents found them.
type Paths struct {
	// Healthy is the Healthy condition's status (True, False, Unknown); Reason and Message
	// explain it.
	Healthy string `json:"healthy"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Pairs of attached nodes, by state.
	Pairs      int32 `json:"pairs"`
	Verified   int32 `json:"verified"`
	Failing    int32 `json:"failing"`
	Unverified int32 `json:"unverified"`
	// Summary is status.paths.summary ("2/3 verified, 1 failing").
	Summary string `json:"summary"`
	// Failures are failing directions, worst nodes first (at most ten).
	Failures []v1beta1.PathFailure `json:"failures,omitempty"`
}

// MaxPathFailures is how many failing directions the table output lists under the header (JSON
// carries every one the status holds).
const MaxPathFailures = 5

// Header summarises the vm-migration-network Setting s; nil means it does not exist.
func Header(s *v1beta1.Setting) Network {
	if s == nil {
		return Unavailable(ReasonNotFound, "setting "+v1beta1.MigrationNetwork+" not found: is migranet installed?")
	}
	n := Network{Setting: s.Name, Mode: ModePod, Ready: string(metav1.ConditionUnknown)}
	if src := s.Status.Source; src != nil {
		n.Source, n.SourceKind = src.Setting, src.Kind
	}
	switch eff := settings.EffectiveNetwork(s); {
	case len(eff.Errs) > 0:
		n.Mode, n.Summary = ModeUnknown, "invalid value"
	case eff.Network != nil:
		n.Mode, n.Summary, n.Range, n.rangePrefix = ModeMigration, eff.Network.Summary(), eff.Network.Range.String(), eff.Network.Range
		n.NAD = eff.NAD
		n.Applied = s.Status.AppliedNetwork == n.NAD
	case eff.NotJudged != nil:
		n.Mode, n.NAD, n.Summary = ModeNotJudged, eff.NotJudged.NAD, "not judged by migranet"
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady); c != nil {
		n.Ready, n.Reason, n.Message = string(c.Status), c.Reason, oneLine(c.Message)
	} else {
		n.Reason, n.Message = ReasonNoStatus, "no Ready condition yet: is the migranet manager running?"
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionConfigured); c != nil && c.Status == metav1.ConditionFalse {
		n.Message = joinNonEmpty("; ", n.Message, fmt.Sprintf("Configured=False %s: %s", c.Reason, oneLine(c.Message)))
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionExclusive); c != nil && c.Status == metav1.ConditionFalse {
		n.Foreign = oneLine(c.Message)
	}
	for _, node := range s.Status.Nodes {
		n.NodesEligible++
		if node.Reason == "" {
			n.NodesAttached++
		}
	}
	n.Paths = pathsOf(s)
	if c := s.Status.Capacity; c != nil {
		used, okUsed := c.Used.Big()
		usable, okUsable := c.Usable.Big()
		if okUsed && okUsable {
			u, v := json.Number(used.String()), json.Number(usable.String())
			n.IPsUsed, n.IPsUsable = &u, &v
		}
	}
	return n
}

// pathsOf is the Healthy condition and status.paths of s, nil when it has neither.
func pathsOf(s *v1beta1.Setting) *Paths {
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionHealthy)
	if c == nil && s.Status.Paths == nil {
		return nil
	}
	p := &Paths{Healthy: string(metav1.ConditionUnknown), Reason: ReasonNoStatus, Message: "no Healthy condition yet"}
	if c != nil {
		p.Healthy, p.Reason, p.Message = string(c.Status), c.Reason, oneLine(c.Message)
	}
	if st := s.Status.Paths; st != nil {
		p.Pairs, p.Verified, p.Failing, p.Unverified, p.Summary = st.Pairs, st.Verified, st.Failing, st.Unverified, st.Summary
		for _, f := range st.Failures {
			f.Message = oneLine(f.Message)
			p.Failures = append(p.Failures, f)
		}
	}
	return p
}

// Unavailable is the header when the Setting could not be read: reason is one of the Reason
// constants, message says why.
func Unavailable(reason, message string) Network {
	return Network{Setting: v1beta1.MigrationNetwork, Mode: ModeUnknown, Ready: string(metav1.ConditionUnknown),
		Reason: reason, Message: oneLine(message)}
}

// String is the header line, e.g.
// "Migration network: vm-migration-network-0123456789 (migration vlan 100 192.168.100.0/24): Ready, nodes 3/3 attached, IPs 3/253 used";
// address counts are in settings.ShortCount's form ("IPs 3/2^64-2 used" for an IPv6 /64).
func (n Network) String() string {
	var b strings.Builder
	b.WriteString("Migration network")
	if n.Source != "" {
		mode := "Harvester mode"
		if n.SourceKind == v1beta1.SourceHyperConverged {
			mode = "HCO mode"
		}
		fmt.Fprintf(&b, " (%s, decided by %s)", mode, n.Source)
	}
	b.WriteString(": ")
	switch {
	case n.Mode == ModePod:
		b.WriteString("none (pod network)")
	case n.Mode == ModeMigration:
		fmt.Fprintf(&b, "%s (%s)", n.NAD, n.Summary)
		if !n.Applied {
			b.WriteString(", not applied yet")
		}
	case n.Mode == ModeNotJudged:
		fmt.Fprintf(&b, "%s (%s)", n.NAD, n.Summary)
	case n.Summary != "":
		fmt.Fprintf(&b, "unknown (%s)", n.Summary)
	default:
		b.WriteString("unknown")
	}
	b.WriteString(": ")
	switch metav1.ConditionStatus(n.Ready) {
	case metav1.ConditionTrue:
		b.WriteString("Ready")
	case metav1.ConditionFalse:
		b.WriteString("NotReady")
	default:
		b.WriteString("Unknown")
	}
	if n.Ready != string(metav1.ConditionTrue) {
		if why := joinNonEmpty(": ", n.Reason, n.Message); why != "" {
			fmt.Fprintf(&b, " (%s)", why)
		}
	}
	if n.Mode == ModeMigration {
		fmt.Fprintf(&b, ", nodes %d/%d attached", n.NodesAttached, n.NodesEligible)
		if used, usable, ok := n.ips(); ok {
			fmt.Fprintf(&b, ", IPs %s used", settings.CapacitySummary(used, usable))
		}
	}
	if p := n.Paths; p != nil {
		fmt.Fprintf(&b, ", paths %s", orNone(p.Summary))
		if p.Healthy != string(metav1.ConditionTrue) {
			fmt.Fprintf(&b, " (%s)", p.Reason)
		}
	}
	if n.Foreign != "" {
		fmt.Fprintf(&b, "; NOT EXCLUSIVE: %s", n.Foreign)
	}
	return b.String()
}

// ips is the header's address counts as integers, false when either is missing or malformed.
func (n Network) ips() (used, usable *big.Int, ok bool) {
	if n.IPsUsed == nil || n.IPsUsable == nil {
		return nil, nil, false
	}
	used, okUsed := new(big.Int).SetString(n.IPsUsed.String(), 10)
	usable, okUsable := new(big.Int).SetString(n.IPsUsable.String(), 10)
	return used, usable, okUsed && okUsable
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// PathLines are the lines the table output prints under the header while the paths are not all
// verified: the Healthy condition, then up to max failing directions, each with what to check.
func (n Network) PathLines(max int) []string {
	p := n.Paths
	if p == nil || p.Healthy == string(metav1.ConditionTrue) {
		return nil
	}
	lines := []string{fmt.Sprintf("Paths: Healthy=%s (%s): %s", p.Healthy, p.Reason, p.Message)}
	for i, f := range p.Failures {
		if i == max {
			lines = append(lines, fmt.Sprintf("  ... %d more failing (kubectl get settings.migranet.io %s -o yaml: status.paths.failures; kubectl get mpr)", len(p.Failures)-max, n.Setting))
			break
		}
		lines = append(lines, fmt.Sprintf("  %s → %s %s: %s", f.From, f.To, f.Reason, f.Message))
	}
	return lines
}
