package nodeagent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The neighbour table (ARP for IPv4, NDP for IPv6) is one per kernel: every network namespace of
// the node, every pod's, adds to the same table, and the kernel's limits are the initial
// namespace's sysctls net.ipv{4,6}.neigh.default.gc_thresh1/2/3 (the only place they exist: a
// pod's namespace has no neigh/default, and /proc/net/stat/{arp,ndisc}_cache exist in the initial
// namespace only). Above gc_thresh1 the periodic collection removes entries unused for a minute;
// above gc_thresh2 a forced collection (every 5 s at most) removes every entry not updated in the
// last 5 s, so entries in use are resolved again and again; at gc_thresh3 no new entry is made —
// the kernel logs "neighbor table overflow!" and counts table_fulls — and a packet to an
// unresolved neighbour is dropped: for a probe, a false Unreachable.
//
// The agent's probing keeps one entry per peer in its virt-handler's namespace, refreshed every
// round, unless it removes them (Neighbours.Delete). The agent's share of the table is
// NeighbourShare: its entries must stay below gc_thresh2 / NeighbourShare.

// NeighbourShare is the part of the node's table the agent may use: 1/NeighbourShare of
// gc_thresh2 (a quarter), the rest is the pods'. With the defaults (128/512/1024) it is 128
// entries: an agent that keeps an entry per peer stays within it up to 128 peers.
const NeighbourShare = 4

// NeighbourLimits are the kernel's neighbour table thresholds of one family.
type NeighbourLimits struct {
	GCThresh1, GCThresh2, GCThresh3 int
}

// Budget is the agent's share of the table: gc_thresh2 / NeighbourShare entries.
func (l NeighbourLimits) Budget() int { return l.GCThresh2 / NeighbourShare }

// Cap is how many entries a removing agent leaves in place (Prober.SetNeighbourCap): three
// quarters of its budget, the last quarter for the entries of the exchanges going on and in
// their grace.
func (l NeighbourLimits) Cap() int { return l.Budget() - l.Budget()/4 }

// DefaultNeighbourLimits are the kernel's defaults, assumed while the node's cannot be read.
var DefaultNeighbourLimits = NeighbourLimits{GCThresh1: 128, GCThresh2: 512, GCThresh3: 1024}

// RecommendedLimits are the thresholds a node of a network of nodes nodes needs so that an agent
// keeping one entry per peer stays within its share: gc_thresh2 = NeighbourShare × nodes, and
// gc_thresh1 half of it, gc_thresh3 twice it (the kernel's own 1:4:8 ratio); never below the
// kernel's defaults.
func RecommendedLimits(nodes int) NeighbourLimits {
	t2 := max(NeighbourShare*nodes, 512)
	return NeighbourLimits{GCThresh1: max(t2/4, 128), GCThresh2: t2, GCThresh3: max(2*t2, 1024)}
}

// SysctlDir is where a family's default neighbour sysctls are, under /proc/sys.
func SysctlDir(is4 bool) string {
	if is4 {
		return "net/ipv4/neigh/default"
	}
	return "net/ipv6/neigh/default"
}

// StatFile is the kernel's neighbour table statistics of a family, under a /proc/<pid>/net.
func StatFile(is4 bool) string {
	if is4 {
		return "stat/arp_cache"
	}
	return "stat/ndisc_cache"
}

// ReadNeighbourLimits reads gc_thresh1/2/3 from dir (e.g. /proc/sys/net/ipv4/neigh/default).
func ReadNeighbourLimits(dir string) (NeighbourLimits, error) {
	var l NeighbourLimits
	for i, p := range []*int{&l.GCThresh1, &l.GCThresh2, &l.GCThresh3} {
		raw, err := os.ReadFile(filepath.Join(dir, "gc_thresh"+strconv.Itoa(i+1)))
		if err != nil {
			return l, err
		}
		if *p, err = strconv.Atoi(strings.TrimSpace(string(raw))); err != nil {
			return l, fmt.Errorf("gc_thresh%d: %w", i+1, err)
		}
	}
	return l, nil
}

// HostNeighbourLimits reads the thresholds of the node's table. They exist only in the initial
// network namespace: read in place when the agent is there (host network), else through a host
// process that is there (hostPID) — PID 1, or kthreadd (PID 2, a kernel thread, always in the
// initial namespace; PID 1's namespace link is closed to others where it is not dumpable) —
// entered on a locked thread for the read.
func HostNeighbourLimits(procRoot string, is4 bool) (NeighbourLimits, error) {
	local := filepath.Join("/proc/sys", SysctlDir(is4))
	if l, err := ReadNeighbourLimits(local); err == nil {
		return l, nil
	}
	var errs []error
	for _, pid := range []string{"1", "2"} {
		ns, err := os.Open(filepath.Join(procRoot, pid, "ns", "net"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var l NeighbourLimits
		err = inNamespace(int(ns.Fd()), func() error {
			// /proc/sys/net resolves in the calling thread's namespace (locked here).
			var rerr error
			l, rerr = ReadNeighbourLimits(local)
			return rerr
		})
		ns.Close()
		if err == nil {
			return l, nil
		}
		errs = append(errs, err)
	}
	return NeighbourLimits{}, errors.Join(errs...)
}

// ReadHostNeighbourStats reads the node's table statistics of a family, which exist in the
// initial network namespace only, through PID 1's or kthreadd's /proc/<pid>/net.
func ReadHostNeighbourStats(procRoot string, is4 bool) (NeighbourStats, error) {
	s, err := ReadNeighbourStats(filepath.Join(procRoot, "1", "net", StatFile(is4)))
	if err != nil {
		var err2 error
		if s, err2 = ReadNeighbourStats(filepath.Join(procRoot, "2", "net", StatFile(is4))); err2 == nil {
			return s, nil
		}
	}
	return s, err
}

// NeighbourStats are the kernel's counters of one family's table (/proc/net/stat/arp_cache or
// ndisc_cache of the initial namespace): Entries now (every namespace together), and since boot
// the allocations refused at gc_thresh3 (TableFulls, one per "neighbor table overflow!") and the
// forced collections above gc_thresh2.
type NeighbourStats struct {
	Entries, TableFulls, ForcedGCRuns uint64
}

// ReadNeighbourStats parses a stat file: a header line, then one line of hexadecimal counters per
// CPU; entries is the table's (the same on every line), the others are summed.
func ReadNeighbourStats(path string) (NeighbourStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return NeighbourStats{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return NeighbourStats{}, fmt.Errorf("%s: empty", path)
	}
	cols := map[string]int{}
	for i, c := range strings.Fields(sc.Text()) {
		cols[c] = i
	}
	for _, c := range []string{"entries", "table_fulls", "forced_gc_runs"} {
		if _, ok := cols[c]; !ok {
			return NeighbourStats{}, fmt.Errorf("%s: no column %s", path, c)
		}
	}
	var s NeighbourStats
	rows := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < len(cols) {
			continue
		}
		get := func(c string) (uint64, error) { return strconv.ParseUint(f[cols[c]], 16, 64) }
		e, err1 := get("entries")
		full, err2 := get("table_fulls")
		gc, err3 := get("forced_gc_runs")
		if err := errors.Join(err1, err2, err3); err != nil {
			return NeighbourStats{}, fmt.Errorf("%s: %w", path, err)
		}
		if rows == 0 {
			s.Entries = e
		}
		s.TableFulls += full
		s.ForcedGCRuns += gc
		rows++
	}
	if rows == 0 {
		return NeighbourStats{}, fmt.Errorf("%s: no counters", path)
	}
	return s, sc.Err()
}

// Neighbours reads and removes the neighbour entries of one interface of one namespace, over a
// netlink socket opened in that namespace (it stays there). Removing needs CAP_NET_ADMIN.
//
// Every request waits at most Timeout for its answer: the socket is read only when poll says it
// holds a message, and the wait ends at the request's deadline however many messages of other
// senders or sequences arrive meanwhile. A request that gets no answer in time fails with
// ErrNoAnswer. Close waits for a request in progress, so the socket's descriptor number is never
// read after it was closed (and perhaps reused by another socket).
type Neighbours struct {
	mu      sync.Mutex
	fd      int
	closed  bool
	ifindex int32
	family  uint8
	seq     uint32
	// dst is the netlink port requests go to and answers must come from: 0, the kernel.
	dst uint32
	// Timeout bounds each request (0: NetlinkTimeout).
	Timeout time.Duration
}

// NetlinkTimeout is how long a neighbour request waits for its answer by default: the kernel
// answers a dump of a pod's few entries within milliseconds.
const NetlinkTimeout = 2 * time.Second

// ErrNoAnswer is the error of a netlink request that got no answer within its timeout.
var ErrNoAnswer = errors.New("no netlink answer in time")

// openNeighbours opens the socket in the calling thread's namespace.
func openNeighbours(ifindex int, is4 bool) (*Neighbours, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	fam := uint8(unix.AF_INET6)
	if is4 {
		fam = unix.AF_INET
	}
	return &Neighbours{fd: fd, ifindex: int32(ifindex), family: fam}, nil
}

// Close closes the socket, once a request in progress has ended.
func (n *Neighbours) Close() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	return unix.Close(n.fd)
}

// request sends one netlink message of type typ with body and returns the replies until the
// acknowledgement or the end of a dump; an error message becomes the error. It waits at most the
// timeout for them (ErrNoAnswer), whatever else the socket receives (n.mu held).
func (n *Neighbours) request(typ uint16, flags uint16, body []byte) ([]syscall.NetlinkMessage, error) {
	if n.closed {
		return nil, net.ErrClosed
	}
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = NetlinkTimeout
	}
	deadline := time.Now().Add(timeout)
	n.seq++
	hdr := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(hdr[0:4], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(hdr[4:6], typ)
	binary.NativeEndian.PutUint16(hdr[6:8], flags|unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(hdr[8:12], n.seq)
	if err := unix.Sendto(n.fd, append(hdr, body...), unix.MSG_DONTWAIT, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: n.dst}); err != nil {
		return nil, err
	}
	var out []syscall.NetlinkMessage
	for {
		nr, from, err := n.receive(deadline)
		if err != nil {
			return nil, fmt.Errorf("netlink request %d: %w", n.seq, err)
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != n.dst {
			continue // not from the port asked
		}
		msgs, err := syscall.ParseNetlinkMessage(nr)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Header.Seq != n.seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if code := int32(binary.NativeEndian.Uint32(m.Data[0:4])); code != 0 {
						return out, unix.Errno(-code)
					}
				}
				return out, nil
			}
			out = append(out, m)
		}
	}
}

// receive returns the next message the socket holds, waiting until deadline at most
// (ErrNoAnswer): the socket is read only once poll says it holds one, never blocking.
func (n *Neighbours) receive(deadline time.Time) ([]byte, unix.Sockaddr, error) {
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, nil, ErrNoAnswer
		}
		fds := []unix.PollFd{{Fd: int32(n.fd), Events: unix.POLLIN}}
		ready, err := unix.Poll(fds, int((wait+time.Millisecond-1)/time.Millisecond))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, nil, err
		case ready == 0:
			continue
		}
		buf := make([]byte, 1<<16) // the messages kept point into it
		nr, from, err := unix.Recvfrom(n.fd, buf, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, nil, err
		}
		return buf[:nr], from, nil
	}
}

func (n *Neighbours) ndmsg() []byte {
	b := make([]byte, unix.SizeofNdMsg)
	b[0] = n.family
	binary.NativeEndian.PutUint32(b[4:8], uint32(n.ifindex))
	return b
}

// Neighbour is one neighbour entry: its address, state (NUD_*) and how long ago it was last
// confirmed reachable (an address resolution's answer, or a TCP stream's progress: the kernel
// confirms the entry of a connection whose data is acknowledged; a probe's UDP reply does not).
type Neighbour struct {
	Addr      netip.Addr
	State     uint16
	Confirmed time.Duration
}

// userHZ is the unit of the kernel's nda_cacheinfo ages (clock_t, USER_HZ = 100 on Linux).
const userHZ = 100

// Entries returns the interface's entries, except static ones (permanent, or on a device
// without ARP), which no collection removes and no threshold counts.
func (n *Neighbours) Entries() ([]Neighbour, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	msgs, err := n.request(unix.RTM_GETNEIGH, unix.NLM_F_DUMP, n.ndmsg())
	if err != nil {
		return nil, err
	}
	var out []Neighbour
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWNEIGH || len(m.Data) < unix.SizeofNdMsg {
			continue
		}
		nd := (*unix.NdMsg)(unsafe.Pointer(&m.Data[0]))
		if nd.Ifindex != n.ifindex || nd.Family != n.family || nd.State&(unix.NUD_PERMANENT|unix.NUD_NOARP) != 0 {
			continue
		}
		e := Neighbour{State: nd.State}
		for b := m.Data[unix.SizeofNdMsg:]; len(b) >= 4; {
			l := int(binary.NativeEndian.Uint16(b[0:2]))
			if l < 4 || l > len(b) {
				break
			}
			switch binary.NativeEndian.Uint16(b[2:4]) {
			case unix.NDA_DST:
				e.Addr, _ = netip.AddrFromSlice(b[4:l])
			case unix.NDA_CACHEINFO:
				if l >= 8 {
					e.Confirmed = time.Duration(binary.NativeEndian.Uint32(b[4:8])) * time.Second / userHZ
				}
			}
			b = b[min((l+3)&^3, len(b)):]
		}
		if e.Addr.IsValid() {
			out = append(out, e)
		}
	}
	return out, nil
}

// List returns the addresses of the interface's entries (Entries).
func (n *Neighbours) List() ([]netip.Addr, error) {
	es, err := n.Entries()
	out := make([]netip.Addr, len(es))
	for i, e := range es {
		out[i] = e.Addr
	}
	return out, err
}

// Delete removes the interface's entry of addr; a missing one is no error.
func (n *Neighbours) Delete(addr netip.Addr) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	raw := addr.AsSlice()
	attr := make([]byte, 4+len(raw))
	binary.NativeEndian.PutUint16(attr[0:2], uint16(len(attr)))
	binary.NativeEndian.PutUint16(attr[2:4], unix.NDA_DST)
	copy(attr[4:], raw)
	_, err := n.request(unix.RTM_DELNEIGH, unix.NLM_F_ACK, append(n.ndmsg(), attr...))
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// NeighbourCheck is what the agent knows of the node's table after a round, to judge whether the
// node's limits hold the network's size.
type NeighbourCheck struct {
	IPv4 bool
	// Limits are the node's thresholds; zero when unknown (nothing is judged then).
	Limits NeighbourLimits
	// Peers probed; Entries the most entries the probes held at once.
	Peers, Entries int
	// Removing: the agent removes the entries beyond its cap (else it holds one per peer).
	Removing bool
	// Overflows during the round; TableEntries in the whole table after it.
	Overflows    int64
	TableEntries int64
}

// Message says what is wrong and what to raise, or "" when the limits hold the probing of every
// peer within the agent's share (Budget) — whether or not the agent removes entries, a network
// larger than the share needs the node's limits raised — and the table did not overflow.
func (c NeighbourCheck) Message() string {
	if c.Limits == (NeighbourLimits{}) {
		return ""
	}
	sysctl := "net.ipv6.neigh.default"
	if c.IPv4 {
		sysctl = "net.ipv4.neigh.default"
	}
	// For the network's size; after an overflow, also for twice the entries the table held (a
	// node whose pods need more than the network does).
	rec := RecommendedLimits(c.Peers + 1)
	why := fmt.Sprintf("for this network's %d nodes", c.Peers+1)
	if c.Overflows > 0 {
		if byTable := RecommendedLimits(int(c.TableEntries) / 2); byTable.GCThresh2 > rec.GCThresh2 {
			rec, why = byTable, fmt.Sprintf("for the %d entries the table held", c.TableEntries)
		}
	}
	raise := fmt.Sprintf("raise %s.gc_thresh1/2/3 (now %d/%d/%d) to at least %d/%d/%d %s, plus what the node's pods need",
		sysctl, c.Limits.GCThresh1, c.Limits.GCThresh2, c.Limits.GCThresh3,
		max(rec.GCThresh1, c.Limits.GCThresh1), max(rec.GCThresh2, c.Limits.GCThresh2), max(rec.GCThresh3, c.Limits.GCThresh3), why)
	var msgs []string
	if c.Overflows > 0 {
		msgs = append(msgs, fmt.Sprintf("the node's neighbour table overflowed %d times during the round (%d entries, gc_thresh3 %d): new neighbours of every pod on the node went unresolved",
			c.Overflows, c.TableEntries, c.Limits.GCThresh3))
	}
	switch budget := c.Limits.Budget(); {
	case c.Peers > budget && c.Removing:
		msgs = append(msgs, fmt.Sprintf("probing %d peers needs %d neighbour entries, more than the agent's share of the node's table (gc_thresh2 %d / %d = %d): "+
			"the agent keeps %d and removes the others after each exchange, which costs an address resolution (a broadcast on the migration network) per peer and round",
			c.Peers, c.Peers, c.Limits.GCThresh2, NeighbourShare, budget, c.Limits.Cap()))
	case c.Peers > budget:
		msgs = append(msgs, fmt.Sprintf("probing %d peers needs %d neighbour entries, more than the agent's share of the node's table (gc_thresh2 %d / %d = %d): "+
			"the agent keeps one per peer (--keep-neighbour-entries, or it may not remove them: that needs CAP_NET_ADMIN)",
			c.Peers, c.Peers, c.Limits.GCThresh2, NeighbourShare, budget))
	case c.Entries > budget:
		msgs = append(msgs, fmt.Sprintf("the agent's probes held %d neighbour entries, more than its share of the node's table (gc_thresh2 %d / %d = %d)",
			c.Entries, c.Limits.GCThresh2, NeighbourShare, budget))
	}
	if len(msgs) == 0 {
		return ""
	}
	return strings.Join(msgs, "; ") + ": " + raise
}
