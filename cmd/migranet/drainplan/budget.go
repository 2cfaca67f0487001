package drainplan

import (
	"fmt"
	"strconv"
)

// Budget is the per-node migration budget a drain meets (migration-policy's budget, issue
// "A per-node migration budget"): each node's bandwidth in each direction, bytes a second (0:
// none), and how many migrations may stream into it at once (0: none). The steering prefers other
// targets for a node at its inbound limit, and the probe agents shape each node's migration
// traffic to its bandwidth, in and out.
type Budget struct {
	Bandwidth func(node string) int64
	Inbound   func(node string) int
}

// Capped is m for a migration from source to target while slots migrations stream out of source
// at once: no faster than target's budget (its inbound shaping), nor than source's budget shared
// by the slots (its outbound shaping: the drained node's migrations share it). A nil b, or nodes
// without a budget, leave m as it is.
func (b *Budget) Capped(m Measured, source, target string, slots int) Measured {
	if b == nil || b.Bandwidth == nil {
		return m
	}
	out, in := b.Bandwidth(source), b.Bandwidth(target)
	share := int64(0)
	if out > 0 {
		share = out / int64(max(slots, 1))
	}
	switch {
	case share > 0 && share < m.BytesPerSecond && (in <= 0 || share <= in):
		return Measured{share, fmt.Sprintf("%s's budget %s shared by %d migrations streaming out of it at once, below %s (%s)",
			source, Rate(out), max(slots, 1), Rate(m.BytesPerSecond), m.From)}
	case in > 0 && in < m.BytesPerSecond:
		return Measured{in, fmt.Sprintf("%s's budget %s, below %s (%s)", target, Rate(in), Rate(m.BytesPerSecond), m.From)}
	}
	return m
}

// Words says what the budget limits for a plan's Inbound line: the inbound limit of the targets
// named, "" when no node has a budget.
func (b *Budget) Words(targets []string) string {
	if b == nil || b.Inbound == nil {
		return ""
	}
	lo, hi := 0, 0
	for _, t := range targets {
		if n := b.Inbound(t); n > 0 {
			if lo == 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
	}
	switch {
	case hi == 0:
		return ""
	case lo == hi:
		return strconv.Itoa(lo) + " per target node (the migration budget's inbound limit)"
	}
	return fmt.Sprintf("%d to %d per target node (the migration budget's inbound limits)", lo, hi)
}
