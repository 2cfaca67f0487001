package nodeagent

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// tree installs or updates migranet's HTB tree on link for rate, and returns its leaf's kind.
func (s *Shaper) tree(link netlink.Link, rate int64) (string, error) {
	root := netlink.MakeHandle(ShaperHandle, 0)
	qs, err := s.h.QdiscList(link)
	if err != nil {
		return "", err
	}
	fresh := true
	var leaf netlink.Qdisc
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_ROOT && a.Handle == root && q.Type() == "htb" {
			fresh = false
		}
		if a.Parent == netlink.MakeHandle(ShaperHandle, classMigr) {
			leaf = q
		}
	}
	if fresh {
		htb := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: root, Parent: netlink.HANDLE_ROOT})
		htb.Defcls = classMigr
		if err := s.h.QdiscReplace(htb); err != nil {
			return "", fmt.Errorf("installing the HTB qdisc (the kernel needs CONFIG_NET_SCH_HTB): %w", err)
		}
		leaf = nil
	}
	if err := s.classes(link, rate); err != nil {
		return "", err
	}
	kind, err := s.leaf(link, rate, leaf)
	if err != nil {
		return "", err
	}
	return kind, s.probeFilters(link, fresh)
}

// classes sets the three classes to rate, writing only those that differ.
func (s *Shaper) classes(link netlink.Link, rate int64) error {
	probes, migr := shares(rate)
	want := []*netlink.HtbClass{htbClass(link, classTotal, rate, rate, 0), htbClass(link, classProbes, probes, rate, 0), htbClass(link, classMigr, migr, rate, 1)}
	have, err := s.h.ClassList(link, netlink.MakeHandle(ShaperHandle, 0))
	if err != nil {
		return err
	}
	for _, w := range want {
		same := false
		for _, c := range have {
			if h, ok := c.(*netlink.HtbClass); ok && h.Handle == w.Handle && h.Rate == w.Rate && h.Ceil == w.Ceil && h.Prio == w.Prio {
				same = true
			}
		}
		if !same {
			if err := s.h.ClassReplace(w); err != nil {
				return fmt.Errorf("class %s: %w", netlink.HandleStr(w.Handle), err)
			}
		}
	}
	return nil
}

// leaf gives the migrations' class its queue: fq_codel (each migration its own flow queue, the
// delay kept low), or, on a kernel without it, a byte FIFO of leafQueueMillis at the budget.
func (s *Shaper) leaf(link netlink.Link, rate int64, have netlink.Qdisc) (string, error) {
	parent := netlink.MakeHandle(ShaperHandle, classMigr)
	limit := uint32(max(min(rate*leafQueueMillis/1000, 1<<30), minLeafQueue))
	if have != nil && have.Type() == "fq_codel" {
		return "fq_codel", nil
	}
	if have != nil && have.Type() == "bfifo" && s.fifoLimit(link, parent) == limit {
		return "bfifo", nil
	}
	fq := netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Parent: parent, Handle: netlink.MakeHandle(classMigr, 0)})
	if have == nil {
		if err := s.h.QdiscAdd(fq); err == nil {
			return "fq_codel", nil
		}
	}
	if err := s.bfifo(link, parent, netlink.MakeHandle(classMigr, 0), limit); err != nil {
		return "", fmt.Errorf("the migrations' queue (neither fq_codel nor bfifo): %w", err)
	}
	return "bfifo", nil
}

// bfifo replaces the qdisc at parent with a byte FIFO of limit bytes. The netlink library writes no
// options for a FIFO, so the request is built here and sent from inside the namespace.
func (s *Shaper) bfifo(link netlink.Link, parent, handle, limit uint32) error {
	return inNamespace(int(s.ns.Fd()), func() error {
		req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(link.Attrs().Index), Handle: handle, Parent: parent})
		req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("bfifo")))
		opt := make([]byte, 4)
		binary.NativeEndian.PutUint32(opt, limit)
		req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, opt))
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
}

// fifoLimit is the limit of the bfifo at parent, 0 when it cannot be read.
func (s *Shaper) fifoLimit(link netlink.Link, parent uint32) uint32 {
	var limit uint32
	_ = inNamespace(int(s.ns.Fd()), func() error {
		req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(link.Attrs().Index)})
		msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return err
		}
		for _, m := range msgs {
			tc := nl.DeserializeTcMsg(m)
			if tc.Parent != parent {
				continue
			}
			attrs, err := nl.ParseRouteAttr(m[tc.Len():])
			if err != nil {
				return err
			}
			for _, a := range attrs {
				if a.Attr.Type == nl.TCA_OPTIONS && len(a.Value) >= 4 {
					limit = binary.NativeEndian.Uint32(a.Value[:4])
				}
			}
		}
		return nil
	})
	return limit
}

// probeFilters classify the probes (UDP from and to the agent's port) into their class, for IPv4
// and IPv6 (no IP options or extension headers: the probes carry none). Rewritten when missing or
// unlike these.
func (s *Shaper) probeFilters(link netlink.Link, fresh bool) error {
	root := netlink.MakeHandle(ShaperHandle, 0)
	ports := uint32(s.port)<<16 | uint32(s.port)
	want := []*netlink.U32{
		probeFilter(link, 1, unix.ETH_P_IP, []netlink.TcU32Key{{Mask: 0x00ff0000, Val: unix.IPPROTO_UDP << 16, Off: 8}, {Mask: 0xffffffff, Val: ports, Off: 20}}),
		probeFilter(link, 2, unix.ETH_P_IPV6, []netlink.TcU32Key{{Mask: 0x0000ff00, Val: unix.IPPROTO_UDP << 8, Off: 4}, {Mask: 0xffffffff, Val: ports, Off: 40}}),
	}
	if !fresh {
		have, err := s.h.FilterList(link, root)
		if err != nil {
			return err
		}
		if sameFilters(have, want) {
			return nil
		}
		for _, f := range have {
			if err := s.h.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
		}
	}
	for _, f := range want {
		if err := s.h.FilterAdd(f); err != nil {
			return fmt.Errorf("the probes' filter (the kernel needs CONFIG_NET_CLS_U32): %w", err)
		}
	}
	return nil
}

func probeFilter(link netlink.Link, prio uint16, proto uint16, keys []netlink.TcU32Key) *netlink.U32 {
	return &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: link.Attrs().Index, Parent: netlink.MakeHandle(ShaperHandle, 0), Priority: prio, Protocol: proto},
		ClassId:     netlink.MakeHandle(ShaperHandle, classProbes),
		Sel:         &netlink.TcU32Sel{Flags: nl.TC_U32_TERMINAL, Nkeys: uint8(len(keys)), Keys: keys},
	}
}

// sameFilters reports whether the root's filters are exactly want (each prio's key filter; the
// kernel also lists a u32 hash table per prio, which carries no selector).
func sameFilters(have []netlink.Filter, want []*netlink.U32) bool {
	found := 0
	for _, f := range have {
		u, ok := f.(*netlink.U32)
		if !ok {
			return false
		}
		if u.Sel == nil {
			continue
		}
		match := false
		for _, w := range want {
			if u.Priority == w.Priority && u.Protocol == w.Protocol && u.ClassId == w.ClassId && len(u.Sel.Keys) == len(w.Sel.Keys) {
				match = true
				for i := range w.Sel.Keys {
					if u.Sel.Keys[i].Mask != w.Sel.Keys[i].Mask || u.Sel.Keys[i].Val != w.Sel.Keys[i].Val || u.Sel.Keys[i].Off != w.Sel.Keys[i].Off {
						match = false
					}
				}
			}
		}
		if !match {
			return false
		}
		found++
	}
	return found == len(want)
}

// redirect sends everything arriving on link to ifb, from an ingress qdisc.
func (s *Shaper) redirect(link, ifb netlink.Link) error {
	ingress := netlink.MakeHandle(0xffff, 0)
	qs, err := s.h.QdiscList(link)
	if err != nil {
		return err
	}
	has := false
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_INGRESS {
			has = true
		}
	}
	if !has {
		if err := s.h.QdiscAdd(&netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: ingress, Parent: netlink.HANDLE_INGRESS}}); err != nil {
			return fmt.Errorf("the ingress qdisc (the kernel needs CONFIG_NET_SCH_INGRESS): %w", err)
		}
	}
	fs, err := s.h.FilterList(link, ingress)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if u, ok := f.(*netlink.U32); ok && u.Sel != nil && redirectsTo(u, ifb.Attrs().Index) {
			return nil
		}
	}
	mirred := netlink.NewMirredAction(ifb.Attrs().Index)
	f := &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: link.Attrs().Index, Parent: ingress, Priority: 1, Protocol: unix.ETH_P_ALL},
		Sel:         &netlink.TcU32Sel{Flags: nl.TC_U32_TERMINAL, Nkeys: 1, Keys: []netlink.TcU32Key{{Mask: 0, Val: 0, Off: 0}}},
		Actions:     []netlink.Action{mirred},
	}
	if err := s.h.FilterAdd(f); err != nil {
		return fmt.Errorf("the redirect (the kernel needs CONFIG_NET_CLS_U32 and CONFIG_NET_ACT_MIRRED): %w", err)
	}
	return nil
}
