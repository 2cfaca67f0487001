package nodeagent

import (
	"errors"
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The shaping the agent installs in virt-handler's network namespace for the node's migration
// budget, in each direction:
//
//	migration0 egress:  htb 4d4e: (default 4d4e:20)
//	                    └ 4d4e:1  rate=ceil=budget
//	                      ├ 4d4e:10 the probes (UDP, the agent's port both ends): rate min(budget/8, 2Mi), prio 0
//	                      └ 4d4e:20 everything else, the migrations: rate budget-probes, prio 1; leaf fq_codel, else bfifo
//	migration0 ingress: ingress ffff: → u32 match-all → mirred redirect → migration0-in (an IFB)
//	migration0-in:      the same htb tree: what arrives is queued, never policed (dropped)
//
// The probes keep a class of their own so that a full budget never delays them into a false
// path failure; both classes borrow up to the budget and never together exceed it.
const (
	// ShaperHandle is the major handle of migranet's HTB qdiscs ("MN").
	ShaperHandle = 0x4d4e
	classTotal   = 0x1
	classProbes  = 0x10
	classMigr    = 0x20
	// IFBName is the IFB device the ingress traffic of migration0 is shaped on, in the same
	// namespace.
	IFBName = "migration0-in"
	// maxProbeShare is the most of the budget reserved for the probes.
	maxProbeShare = 2 << 20
	// leafQueue is how long a queue the migrations' class holds at the budget, in seconds, when
	// the kernel has no fq_codel (a byte FIFO: GRO-merged packets make a packet count meaningless).
	leafQueueMillis = 100
	minLeafQueue    = 256 << 10
	htbQuantum      = 64 << 10
)

// ErrForeignQdisc says migration0 already carries queueing migranet did not install: it is left
// alone, and the budget is not enforced.
var ErrForeignQdisc = errors.New("migration0 carries queueing migranet did not install")

// Shaper shapes one network namespace's migration0 to a budget, through a netlink handle opened
// in that namespace: no thread of the agent stays in it.
type Shaper struct {
	ns     *os.File
	h      *netlink.Handle
	ifName string
	port   uint16
}

// Shaped is what Apply installed.
type Shaped struct {
	// Rate is the budget, bytes a second each direction; 0: nothing installed.
	Rate int64
	// Leaf is the migrations' class queue: fq_codel, or bfifo on a kernel without it.
	Leaf string
}

// OpenShaper opens a shaper for interface ifName in the network namespace at nsPath; probePort is
// the agent's UDP port, whose packets get the probes' class.
func OpenShaper(nsPath, ifName string, probePort int) (*Shaper, error) {
	f, err := os.Open(nsPath)
	if err != nil {
		return nil, err
	}
	h, err := netlink.NewHandleAt(netns.NsHandle(int(f.Fd())), unix.NETLINK_ROUTE)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("netlink in the pod's network namespace: %w", err)
	}
	return &Shaper{ns: f, h: h, ifName: ifName, port: uint16(probePort)}, nil
}

// Close releases the handle; the shaping stays.
func (s *Shaper) Close() {
	s.h.Close()
	s.ns.Close()
}

// Apply shapes both directions of the interface to rate bytes a second (rate > 0), installing
// what is missing and changing only what differs: a budget changed live changes the classes in
// place, the queues and the streams in them untouched.
func (s *Shaper) Apply(rate int64) (Shaped, error) {
	link, err := s.h.LinkByName(s.ifName)
	if err != nil {
		return Shaped{}, fmt.Errorf("%w: %s: %v", ErrNoInterface, s.ifName, err)
	}
	if err := s.checkOwn(link); err != nil {
		return Shaped{}, err
	}
	ifb, err := s.ensureIFB()
	if err != nil {
		return Shaped{}, err
	}
	leaf, err := s.tree(link, rate)
	if err != nil {
		return Shaped{}, fmt.Errorf("shaping %s egress: %w", s.ifName, err)
	}
	if _, err := s.tree(ifb, rate); err != nil {
		return Shaped{}, fmt.Errorf("shaping %s ingress on %s: %w", s.ifName, IFBName, err)
	}
	if err := s.redirect(link, ifb); err != nil {
		return Shaped{}, fmt.Errorf("redirecting %s ingress to %s: %w", s.ifName, IFBName, err)
	}
	return Shaped{Rate: rate, Leaf: leaf}, nil
}

// Remove takes away what Apply installed (and nothing else).
func (s *Shaper) Remove() error {
	link, err := s.h.LinkByName(s.ifName)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNoInterface, s.ifName, err)
	}
	qs, err := s.h.QdiscList(link)
	if err != nil {
		return err
	}
	var errs []error
	for _, q := range qs {
		a := q.Attrs()
		switch {
		case a.Parent == netlink.HANDLE_ROOT && a.Handle == netlink.MakeHandle(ShaperHandle, 0) && q.Type() == "htb":
			errs = append(errs, s.h.QdiscDel(q))
		case a.Parent == netlink.HANDLE_INGRESS && q.Type() == "ingress" && s.ownIngress(link):
			errs = append(errs, s.h.QdiscDel(q))
		}
	}
	if ifb, err := s.h.LinkByName(IFBName); err == nil && ifb.Type() == "ifb" {
		errs = append(errs, s.h.LinkDel(ifb))
	}
	return errors.Join(errs...)
}

// checkOwn refuses a link whose root or ingress queueing someone else installed. The kernel's
// own default root qdisc (handle 0: noqueue, pfifo_fast, mq, ...) is replaced.
func (s *Shaper) checkOwn(link netlink.Link) error {
	qs, err := s.h.QdiscList(link)
	if err != nil {
		return err
	}
	for _, q := range qs {
		a := q.Attrs()
		switch {
		case a.Parent == netlink.HANDLE_ROOT && a.Handle != 0 && a.Handle != netlink.MakeHandle(ShaperHandle, 0):
			return fmt.Errorf("%w: root qdisc %s %s", ErrForeignQdisc, q.Type(), netlink.HandleStr(a.Handle))
		case a.Parent == netlink.HANDLE_INGRESS && (q.Type() != "ingress" || !s.ownIngress(link)):
			return fmt.Errorf("%w: %s qdisc with filters of its own", ErrForeignQdisc, q.Type())
		}
	}
	return nil
}

// ownIngress reports whether every filter of link's ingress qdisc is migranet's redirect (or
// there is none).
func (s *Shaper) ownIngress(link netlink.Link) bool {
	fs, err := s.h.FilterList(link, netlink.HANDLE_INGRESS)
	if err != nil {
		return false
	}
	ifb, err := s.h.LinkByName(IFBName)
	for _, f := range fs {
		u, ok := f.(*netlink.U32)
		if !ok || err != nil || !redirectsTo(u, ifb.Attrs().Index) {
			return false
		}
	}
	return true
}

func redirectsTo(u *netlink.U32, index int) bool {
	for _, a := range u.Actions {
		if m, ok := a.(*netlink.MirredAction); ok && m.Ifindex == index {
			return true
		}
	}
	return u.RedirIndex == index
}

// ensureIFB returns the IFB device, made and set up when missing.
func (s *Shaper) ensureIFB() (netlink.Link, error) {
	if l, err := s.h.LinkByName(IFBName); err == nil {
		if l.Type() != "ifb" {
			return nil, fmt.Errorf("%w: %s exists and is a %s, not an IFB", ErrForeignQdisc, IFBName, l.Type())
		}
		if l.Attrs().Flags&unix.IFF_UP == 0 {
			if err := s.h.LinkSetUp(l); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	if err := s.h.LinkAdd(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: IFBName, TxQLen: 1000}}); err != nil {
		return nil, fmt.Errorf("creating the IFB %s (the kernel needs CONFIG_IFB): %w", IFBName, err)
	}
	l, err := s.h.LinkByName(IFBName)
	if err != nil {
		return nil, err
	}
	return l, s.h.LinkSetUp(l)
}

// shares splits rate between the probes and the migrations.
func shares(rate int64) (probes, migrations int64) {
	probes = min(rate/8, maxProbeShare)
	return probes, rate - probes
}

func htbClass(link netlink.Link, minor uint32, rate, ceil int64, prio uint32) *netlink.HtbClass {
	parent := netlink.MakeHandle(ShaperHandle, classTotal)
	if minor == classTotal {
		parent = netlink.MakeHandle(ShaperHandle, 0)
	}
	burst := uint32(min(ceil/100+htbQuantum, 1<<30)) // 10 ms at the ceiling, and a whole GSO packet
	return netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: link.Attrs().Index, Parent: parent, Handle: netlink.MakeHandle(ShaperHandle, uint16(minor))},
		netlink.HtbClassAttrs{Rate: uint64(rate) * 8, Ceil: uint64(ceil) * 8, Buffer: burst, Cbuffer: burst, Quantum: htbQuantum, Prio: prio})
}
