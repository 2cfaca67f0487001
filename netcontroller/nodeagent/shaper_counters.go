package nodeagent

import (
	"time"

	"github.com/vishvananda/netlink"
)

// Counters are what crossed migration0 and what the shaper did, as the kernel counts them.
type Counters struct {
	At time.Time
	// In and Out are the bytes migration0 received and sent since it was made: every migration
	// byte of the node, and the probes (a few kB/s).
	In, Out uint64
	// Shaped is the migrations' class in each direction (Shaped[DirIn], Shaped[DirOut]); zero
	// while nothing is shaped.
	Shaped [2]ClassCounters
}

// Directions, as indices of Counters.Shaped.
const (
	DirIn  = 0
	DirOut = 1
)

// ClassCounters are one HTB class's counters.
type ClassCounters struct {
	// Bytes went through the class; Overlimits counts the times it held a packet back because the
	// budget was spent (the budget binding); Drops the packets its queue had no room for.
	Bytes, Overlimits, Drops uint64
}

// Counters reads migration0's byte counters and, when shaped, the migrations' class of each
// direction.
func (s *Shaper) Counters() (Counters, error) {
	link, err := s.h.LinkByName(s.ifName)
	if err != nil {
		return Counters{}, err
	}
	c := Counters{At: time.Now()}
	if st := link.Attrs().Statistics; st != nil {
		c.In, c.Out = st.RxBytes, st.TxBytes
	}
	c.Shaped[DirOut] = s.classCounters(link)
	if ifb, err := s.h.LinkByName(IFBName); err == nil {
		c.Shaped[DirIn] = s.classCounters(ifb)
	}
	return c, nil
}

func (s *Shaper) classCounters(link netlink.Link) ClassCounters {
	cs, err := s.h.ClassList(link, netlink.MakeHandle(ShaperHandle, 0))
	if err != nil {
		return ClassCounters{}
	}
	for _, c := range cs {
		a := c.Attrs()
		if a.Handle != netlink.MakeHandle(ShaperHandle, classMigr) || a.Statistics == nil {
			continue
		}
		var out ClassCounters
		if b := a.Statistics.Basic; b != nil {
			out.Bytes = b.Bytes
		}
		if q := a.Statistics.Queue; q != nil {
			out.Overlimits, out.Drops = uint64(q.Overlimits), uint64(q.Drops)
		}
		return out
	}
	return ClassCounters{}
}
