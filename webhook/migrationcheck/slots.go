package migrationcheck

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings"
)

// inboundRoom is what rule inboundSlot found for one migration: of the nodes that could take its
// target pod (walked until enough room was found), their inbound slots, how many of those are
// free, and how many migrations wait for a slot (admitted, not placed: counted pending, or
// reserved by an admission not yet in the cache).
type inboundRoom struct {
	nodes, slots, free, waiting int
}

// roomFor walks the nodes the target pod of in's migration could land on (the target search's
// verdict per node; behind a failing path when pathHealthy drops those) and adds up their inbound
// slots, stopping once more are free than migrations wait. ok is false when it has nothing to
// judge: no VMI, no budget, no count of the traffic, or a target that cannot be derived
// (feasibleTarget speaks).
func roomFor(in *CreateInput) (r inboundRoom, ok bool) {
	if in.VMI == nil || in.Policy == nil || in.Policy.Budget == nil || in.Traffic == nil {
		return r, false
	}
	t, conflict := newTarget(in)
	if conflict != "" {
		return r, false
	}
	r.waiting = in.Traffic.Pending + unseen(in.Traffic, in.Reserved, in.VMIM.UID)
	limits := settings.MigrationLimitsOf(in.KubeVirt)
	for _, n := range in.Nodes {
		if n == nil || t.judge(n).stage != numStages || t.paths.isBroken(n.Name) {
			continue
		}
		limit := limits.InboundLimit(in.Policy.Budget.For(n.Labels))
		r.nodes++
		r.slots += limit
		r.free += max(0, limit-in.Traffic.In[n.Name])
		if r.free > r.waiting {
			break
		}
	}
	return r, true
}

// JudgesSlots reports whether rule inboundSlot judges in (for its user): a budget, a counted
// traffic, a VMI, and the rule not off.
func JudgesSlots(in *CreateInput) bool {
	return in.VMI != nil && in.Policy != nil && in.Policy.Budget != nil && in.Traffic != nil &&
		in.Policy.ModeFor(settings.RuleInboundSlot, in.User) != settings.ModeOff
}

// unseen counts the reservations (but self's) of migrations the traffic's count did not look at:
// they wait for a slot. One it looked at counts from the count, whatever the cache shows since
// (the count is a snapshot taken before the reservations were read: a VMIM the cache shows by
// then, the count may not).
func unseen(t *Traffic, reserved []types.UID, self types.UID) int {
	n := 0
	for _, uid := range reserved {
		if uid != self && !t.Knows(uid) {
			n++
		}
	}
	return n
}

// checkInboundSlot: rule inboundSlot. A node with no target at all is feasibleTarget's business:
// the rule speaks only when some node could take the pod but none of those has a slot left.
func checkInboundSlot(in *CreateInput) finding {
	r, ok := roomFor(in)
	if !ok || r.nodes == 0 || r.free > r.waiting {
		return finding{}
	}
	return finding{message: fmt.Sprintf("no inbound migration slot is free for VirtualMachineInstance %s/%s: the %d %s that could take its target pod %s %d %s (their budgets' inbound limits), %d in use, and %d %s admitted but not placed yet; "+
		"KubeVirt's evacuation and workload updater create the migration again; retry when a migration ends, or raise the migration policy's budget.inboundMigrations",
		in.VMI.Namespace, in.VMI.Name, r.nodes, settings.Plural(r.nodes, "node", "nodes"), settings.Plural(r.nodes, "has", "have"), r.slots,
		settings.Plural(r.slots, "slot", "slots"), r.slots-r.free, r.waiting, settings.Plural(r.waiting, "migration is", "migrations are"))}
}
