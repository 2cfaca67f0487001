package nodeagent

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Why the agent could not open its socket; each maps to a PathReport problem.
var (
	ErrNoProcess   = errors.New("no process of the pod was found")
	ErrNoInterface = errors.New("no interface holds the address")
)

// PodProcess finds a process of the pod with uid under procRoot (the host's /proc: the agent runs
// with hostPID): one whose cgroup path names the pod, as the kubelet names pod cgroups, with the
// cgroupfs driver (…/pod<uid>/…) or the systemd one (…-pod<uid with _ for ->.slice/…).
func PodProcess(procRoot, uid string) (int, error) {
	if uid == "" {
		return 0, ErrNoProcess
	}
	dash := []byte("pod" + uid)
	under := []byte("pod" + strings.ReplaceAll(uid, "-", "_"))
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		if bytes.Contains(cg, dash) || bytes.Contains(cg, under) {
			return pid, nil
		}
	}
	return 0, ErrNoProcess
}

// NamespaceID identifies the network namespace at path (its device and inode): a pod sandbox
// made anew for the same pod has another.
func NamespaceID(path string) (uint64, uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Dev, st.Ino, nil
}

// Opened is the probe socket opened in a pod's network namespace, and what was found there.
type Opened struct {
	Conn *net.UDPConn
	// MTU is the interface's MTU.
	MTU int
	// Neighbours reads and removes the interface's neighbour entries (a netlink socket in the
	// same namespace; OpenInWithNeighbours only, nil when it could not be opened): give it to the
	// Prober (UseNeighbours), which closes it.
	Neighbours *Neighbours
}

// OpenIn opens the probe socket on addr:port inside the network namespace at nsPath, after
// checking that the interface ifName there holds addr. The socket stays in that namespace; the
// calling thread returns to its own (a thread that cannot is left locked, so the runtime ends it).
func OpenIn(nsPath, ifName string, addr netip.Addr, port int) (Opened, error) {
	return openIn(nsPath, ifName, addr, port, false)
}

// OpenInWithNeighbours is OpenIn, and opens Opened.Neighbours on the interface as well.
func OpenInWithNeighbours(nsPath, ifName string, addr netip.Addr, port int) (Opened, error) {
	return openIn(nsPath, ifName, addr, port, true)
}

func openIn(nsPath, ifName string, addr netip.Addr, port int, neighbours bool) (Opened, error) {
	ns, err := os.Open(nsPath)
	if err != nil {
		return Opened{}, err
	}
	defer ns.Close()
	var out Opened
	err = inNamespace(int(ns.Fd()), func() error {
		ifc, err := net.InterfaceByName(ifName)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrNoInterface, ifName, err)
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrNoInterface, ifName, err)
		}
		found := false
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == addr {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%w: %s does not hold %s", ErrNoInterface, ifName, addr)
		}
		conn, err := Listen(netip.AddrPortFrom(addr, uint16(port)))
		if err != nil {
			return err
		}
		out = Opened{Conn: conn, MTU: ifc.MTU}
		if !neighbours {
			return nil
		}
		if n, err := openNeighbours(ifc.Index, addr.Unmap().Is4()); err == nil {
			out.Neighbours = n
		}
		return nil
	})
	return out, err
}

// inNamespace runs fn on a locked thread switched to the network namespace fd.
func inNamespace(fd int, fn func() error) error {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer self.Close()
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering the pod's network namespace: %w", err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// Stay locked: the goroutine's end then ends the thread, never reused in the wrong namespace.
		return fmt.Errorf("returning from the pod's network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}
