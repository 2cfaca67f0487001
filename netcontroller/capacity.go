package netcontroller

import (
	"fmt"
	"math/big"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// addressCount is the range's capacity as exact integers: the one place the status field, the
// IPCapacity condition, the pool check's threshold and the gauges take their numbers from. An IPv6
// range's counts exceed an int64 (a /64 has 2^64-2 usable addresses), so nothing here is clamped.
type addressCount struct {
	usable, used, free *big.Int
}

// countAddresses counts m's usable addresses (0 when m is nil) against used, the
// addresses held in the range (Observation.Used: what virt-handlers report together with what
// whereabouts held at the last read of the range's pool). free is usable minus used, at least 0.
func countAddresses(m *settings.Network, used int64) addressCount {
	c := addressCount{usable: m.Usable(), used: big.NewInt(max(used, 0))}
	c.free = new(big.Int).Sub(c.usable, c.used)
	if c.free.Sign() < 0 {
		c.free.SetInt64(0)
	}
	return c
}

// low is the IPCapacity threshold: fewer than 2, or fewer than 10 %, of the usable addresses free.
func (c addressCount) low() bool {
	tenfold := new(big.Int).Mul(c.free, big.NewInt(10))
	return c.free.Cmp(big.NewInt(2)) < 0 || tenfold.Cmp(c.usable) < 0
}

// status is the capacity as the Setting's status carries it: exact decimal strings and a summary.
func (c addressCount) status() *v1beta1.IPCapacity {
	return &v1beta1.IPCapacity{Usable: v1beta1.CountOf(c.usable), Used: v1beta1.CountOf(c.used), Free: v1beta1.CountOf(c.free),
		Summary: settings.CapacitySummary(c.used, c.usable)}
}

// capacityOf counts the range's addresses and judges whether enough are free (addressCount.low).
func capacityOf(m *settings.Network, obs Observation) (metav1.Condition, *v1beta1.IPCapacity) {
	c := countAddresses(m, obs.Used)
	free, usable := settings.ShortCount(c.free), settings.ShortCount(c.usable)
	cond := metav1.Condition{Type: v1beta1.ConditionIPCapacity, Status: metav1.ConditionTrue, Reason: ReasonSufficient,
		Message: fmt.Sprintf("%s of %s usable addresses free", free, usable)}
	if c.low() {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonLowCapacity
		cond.Message = fmt.Sprintf("only %s of %s usable addresses of %s are free: a node added now may leave its virt-handler without a migration address; widen the range or drop excludes", free, usable, m.Range)
	}
	return cond, c.status()
}
