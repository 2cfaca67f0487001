package migrationcheck

import "math/bits"

// roomClass is a coarse, conservative summary of what one node has free, small enough that a
// review can rule out hundreds of full nodes by reading one array instead of each node's usage:
// for cpu, memory, ephemeral storage (the fixed slots of amounts) and pods, 7 bits each holding the
// bit length of the free amount (0 when nothing is free), and roomKnown once it was computed. A
// node whose field is below the demand's bit length surely cannot hold it (its free amount is
// below 2^(len-1) <= want); an equal or greater field decides nothing, and fits is then asked.
type roomClass uint32

const (
	roomKnown     roomClass = 1 << 31
	roomFieldBits           = 7
	roomFieldMask           = 1<<roomFieldBits - 1
	roomPodsField           = 3 // after the three fixed slots
	unlimitedPods           = 63
)

// freeLen is the bit length of a free amount, 0 when nothing is free.
func freeLen(free int64) roomClass {
	if free <= 0 {
		return 0
	}
	return roomClass(bits.Len64(uint64(free)))
}

// classOf is the class of a node with allocatable alloc and usage used.
func classOf(alloc *nodeAlloc, used *NodeUsage) roomClass {
	c := roomKnown
	for s := range len(alloc.res.fixed) {
		c |= freeLen(alloc.res.fixed[s]-used.Requests.fixed[s]) << (s * roomFieldBits)
	}
	pods := roomClass(unlimitedPods)
	if alloc.hasPods {
		pods = freeLen(alloc.pods - int64(used.Pods))
	}
	return c | pods<<(roomPodsField*roomFieldBits)
}

// needOf is the class a node needs, at the least, to hold demand d and one more pod: the bit
// length of each fixed-slot demand (other resources are left to fits).
func needOf(d []demand) roomClass {
	n := roomClass(1) << (roomPodsField * roomFieldBits)
	for _, r := range d {
		if r.slot >= 0 {
			n |= freeLen(r.want) << (r.slot * roomFieldBits)
		}
	}
	return n
}

// lacks reports whether a node of class c surely cannot hold what need asks for: c is known and
// one of its fields is below need's.
func (c roomClass) lacks(need roomClass) bool {
	if c&roomKnown == 0 {
		return false
	}
	for f := range roomPodsField + 1 {
		shift := f * roomFieldBits
		if (c>>shift)&roomFieldMask < (need>>shift)&roomFieldMask {
			return true
		}
	}
	return false
}
