package status

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// NodeRow is one node of the node view (migranet status --nodes): its migration budget as its
// probe agent shapes it, what crossed its migration0 in the agent's last round, and the
// migrations streaming into and out of it.
type NodeRow struct {
	Node string `json:"node"`
	// Report says how far the figures can be trusted: "" for a report of the agent's last
	// round, ReportSilent when the agent has finished no round within its silence bound (the
	// figures are the last it wrote), ReportNone when the node has no report.
	Report string `json:"report,omitempty"`
	// ReportAge is how long ago the agent's last round ended (0 when unknown).
	ReportAgeSeconds int64 `json:"reportAgeSeconds,omitempty"`
	// BudgetBytesPerSecond is the node's budget each way (0: none applies).
	BudgetBytesPerSecond int64  `json:"budgetBytesPerSecond"`
	Override             string `json:"override,omitempty"`
	// Shaping is Off, Enforced or Failed (v1beta1.Shaping*), "" when the agent reports none.
	Shaping               string `json:"shaping"`
	ShapingMessage        string `json:"shapingMessage,omitempty"`
	WindowSeconds         int32  `json:"windowSeconds,omitempty"`
	InBytesPerSecond      int64  `json:"inBytesPerSecond"`
	OutBytesPerSecond     int64  `json:"outBytesPerSecond"`
	PeakInBytesPerSecond  int64  `json:"peakInBytesPerSecond"`
	PeakOutBytesPerSecond int64  `json:"peakOutBytesPerSecond"`
	HeldIn                int64  `json:"heldIn"`
	HeldOut               int64  `json:"heldOut"`
	// Inbound and Outbound count the migrations in flight into and out of the node (their
	// target or source); InboundLimit is the budget's inbound limit for it (0: none).
	Inbound      int `json:"inbound"`
	Outbound     int `json:"outbound"`
	InboundLimit int `json:"inboundLimit,omitempty"`
}

// What NodeRow.Report says.
const (
	ReportSilent = "silent"
	ReportNone   = "none"
)

// NodeInput is what the node view is made of.
type NodeInput struct {
	// Nodes are the cluster's node names; a node with a report or a migration is listed too.
	Nodes []string
	// Reports are the probe agents' PathReports (one per node, named after it).
	Reports []v1beta1.PathReport
	// Rows are the migrations of every namespace.
	Rows []Row
	// InboundLimit is a node's inbound limit (0: none); nil: none for every node.
	InboundLimit func(node string) int
	Now          time.Time
}

// Nodes makes the node view, sorted by node name.
func Nodes(in NodeInput) []NodeRow {
	byNode := map[string]*NodeRow{}
	row := func(node string) *NodeRow {
		r := byNode[node]
		if r == nil {
			r = &NodeRow{Node: node, Report: ReportNone}
			if in.InboundLimit != nil {
				r.InboundLimit = in.InboundLimit(node)
			}
			byNode[node] = r
		}
		return r
	}
	for _, n := range in.Nodes {
		row(n)
	}
	for i := range in.Reports {
		rep := &in.Reports[i]
		r := row(rep.Name)
		r.Report = ""
		ended := rep.Since.Time
		if rep.LastRound != nil {
			ended = rep.LastRound.Completed.Time
		}
		if !ended.IsZero() {
			r.ReportAgeSeconds = int64(in.Now.Sub(ended).Truncate(time.Second) / time.Second)
		}
		interval := time.Duration(rep.IntervalSeconds) * time.Second
		if rep.LastRound == nil || interval <= 0 || in.Now.Sub(ended) > health.SilentAfter(interval) {
			r.Report = ReportSilent
		}
		if m := rep.Migration; m != nil {
			r.BudgetBytesPerSecond, r.Override, r.Shaping, r.ShapingMessage = m.BudgetBytesPerSecond, m.Override, m.Shaping, m.Message
			r.WindowSeconds = m.WindowSeconds
			r.InBytesPerSecond, r.OutBytesPerSecond = m.InBytesPerSecond, m.OutBytesPerSecond
			r.PeakInBytesPerSecond, r.PeakOutBytesPerSecond = m.PeakInBytesPerSecond, m.PeakOutBytesPerSecond
			r.HeldIn, r.HeldOut = m.HeldIn, m.HeldOut
		}
	}
	for _, m := range in.Rows {
		if !m.InFlight {
			continue
		}
		if m.TargetNode != "" {
			row(m.TargetNode).Inbound++
		}
		if m.SourceNode != "" {
			row(m.SourceNode).Outbound++
		}
	}
	out := make([]NodeRow, 0, len(byNode))
	for _, r := range byNode {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b NodeRow) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// BudgetSummary is the node view in one line, for the header of migranet status.
type BudgetSummary struct {
	// Nodes counts the nodes listed, Budgeted those a budget applies to, Enforced those whose
	// agent shapes it, Failed those whose agent could not (FailedNodes names them).
	Nodes       int      `json:"nodes"`
	Budgeted    int      `json:"budgeted"`
	Enforced    int      `json:"enforced"`
	Failed      int      `json:"failed"`
	FailedNodes []string `json:"failedNodes,omitempty"`
	// Silent counts the budgeted nodes whose agent is silent: their shaping is not known now.
	Silent int `json:"silent,omitempty"`
	// Busiest is the budgeted node using the largest share of its budget in either direction
	// over its agent's last round, with that share in percent.
	Busiest      string `json:"busiest,omitempty"`
	BusiestShare int    `json:"busiestShare,omitempty"`
	// AtInboundLimit counts the nodes with as many inbound migrations as their limit, or more.
	AtInboundLimit int `json:"atInboundLimit,omitempty"`
	// Low and High are the smallest and largest budget in force.
	Low  int64 `json:"low,omitempty"`
	High int64 `json:"high,omitempty"`
}

// Summarize sums the node view up; nil when no node has a budget (nothing to say).
func Summarize(nodes []NodeRow) *BudgetSummary {
	s := &BudgetSummary{Nodes: len(nodes)}
	for _, n := range nodes {
		if n.InboundLimit > 0 && n.Inbound >= n.InboundLimit {
			s.AtInboundLimit++
		}
		if n.BudgetBytesPerSecond <= 0 {
			continue
		}
		s.Budgeted++
		if s.Low == 0 || n.BudgetBytesPerSecond < s.Low {
			s.Low = n.BudgetBytesPerSecond
		}
		s.High = max(s.High, n.BudgetBytesPerSecond)
		switch {
		case n.Report != "":
			s.Silent++
			continue
		case n.Shaping == v1beta1.ShapingEnforced:
			s.Enforced++
		case n.Shaping == v1beta1.ShapingFailed:
			s.Failed++
			s.FailedNodes = append(s.FailedNodes, n.Node)
		}
		used := max(n.InBytesPerSecond, n.OutBytesPerSecond)
		if share := int(used * 100 / n.BudgetBytesPerSecond); s.Busiest == "" || share > s.BusiestShare {
			s.Busiest, s.BusiestShare = n.Node, share
		}
	}
	if s.Budgeted == 0 {
		return nil
	}
	return s
}

// String is the header's budget line.
func (s *BudgetSummary) String() string {
	if s == nil {
		return ""
	}
	amount := settings.Rate(s.Low)
	if s.High != s.Low {
		amount = settings.Rate(s.Low) + " to " + settings.Rate(s.High)
	}
	parts := []string{fmt.Sprintf("budget: %s each way on %d of %d nodes, shaped on %d", amount, s.Budgeted, s.Nodes, s.Enforced)}
	if s.Failed > 0 {
		parts = append(parts, fmt.Sprintf("SHAPING FAILED on %s (migranet status --nodes says why)", strings.Join(s.FailedNodes, ", ")))
	}
	if s.Silent > 0 {
		parts = append(parts, fmt.Sprintf("%d silent (not known now)", s.Silent))
	}
	if s.Busiest != "" && s.BusiestShare > 0 { // idle: nothing to say of the busiest
		parts = append(parts, fmt.Sprintf("busiest %s at %d%% of its budget", s.Busiest, s.BusiestShare))
	}
	if s.AtInboundLimit > 0 {
		parts = append(parts, fmt.Sprintf("%d at their inbound limit (steered around)", s.AtInboundLimit))
	}
	return strings.Join(parts, "; ")
}

// NodeColumns are the node view's column titles.
var NodeColumns = []string{"NODE", "BUDGET", "SHAPING", "IN (PEAK)", "OUT (PEAK)", "HELD IN/OUT", "MIGRATIONS IN/OUT", "REPORT"}

// Cells are the node row's table cells, in the order of NodeColumns.
func (n NodeRow) Cells() []string {
	budget, shaping := "-", orNone(n.Shaping)
	if n.BudgetBytesPerSecond > 0 {
		budget = settings.Rate(n.BudgetBytesPerSecond)
		if n.Override != "" {
			budget += " (" + n.Override + ")"
		}
	}
	if n.Shaping == v1beta1.ShapingFailed && n.ShapingMessage != "" {
		shaping += ": " + n.ShapingMessage
	}
	rate := func(avg, peak int64) string { return settings.Rate(avg) + " (" + settings.Rate(peak) + ")" }
	in, out, held := rate(n.InBytesPerSecond, n.PeakInBytesPerSecond), rate(n.OutBytesPerSecond, n.PeakOutBytesPerSecond),
		strconv.FormatInt(n.HeldIn, 10)+"/"+strconv.FormatInt(n.HeldOut, 10)
	if n.Report == ReportNone {
		in, out, held = "-", "-", "-"
	}
	migrations := strconv.Itoa(n.Inbound)
	if n.InboundLimit > 0 {
		migrations += " of " + strconv.Itoa(n.InboundLimit)
	}
	migrations += "/" + strconv.Itoa(n.Outbound)
	report := "last round"
	switch {
	case n.Report == ReportNone:
		report = "no report: no probe agent on the node's migration network"
	case n.Report == ReportSilent:
		report = "SILENT: the figures are " + since(n.ReportAgeSeconds) + " old"
	case n.ReportAgeSeconds > 0:
		report += ", " + since(n.ReportAgeSeconds) + " ago"
	}
	return []string{n.Node, budget, shaping, in, out, held, migrations, report}
}

// since words seconds as a duration ("45s", "3m0s"); "unknown" for 0.
func since(seconds int64) string {
	if seconds <= 0 {
		return "unknown"
	}
	return (time.Duration(seconds) * time.Second).String()
}

// PrintNodes writes the node view under the network's header line.
func PrintNodes(w io.Writer, format string, net Network, nodes []NodeRow) error {
	if format == FormatJSON {
		if nodes == nil {
			nodes = []NodeRow{}
		}
		return writeJSON(w, struct {
			Network Network   `json:"network"`
			Nodes   []NodeRow `json:"nodes"`
		}{net, nodes})
	}
	var t table
	var b strings.Builder
	b.WriteString(net.headerLines())
	lines := [][]string{NodeColumns}
	for _, n := range nodes {
		lines = append(lines, n.Cells())
	}
	t.widen(lines...)
	for _, l := range lines {
		b.WriteString(t.line(l))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
