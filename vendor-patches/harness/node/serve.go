package node

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
	ephemeraldiskutils "kubevirt.io/kubevirt/pkg/ephemeral-disk-utils"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// Serve runs a node until in is closed.
func Serve(in io.Reader, out io.Writer) error {
	ephemeraldiskutils.MockDefaultOwnershipManager()
	if err := kvproxy.RegisterMetrics(); err != nil {
		return err
	}
	// A leak check must not be hidden by garbage collection: a leaked socket is
	// closed by its finalizer at the next collection. "gc-off" stops collection
	// (up to this ceiling) from the start of a checked operation to its count.
	debug.SetMemoryLimit(2 << 30)
	s := &server{log: kvproxy.CaptureLogs(os.Stderr)}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req Request
		resp := Response{}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp.Err = err.Error()
		} else if err := s.handle(&req, &resp); err != nil {
			resp.Err = err.Error()
		}
		if err := enc.Encode(&resp); err != nil {
			return err
		}
	}
	return sc.Err()
}

type server struct {
	log     *kvproxy.ProxyLog
	pki     *kvproxy.PKI
	manager migrationproxy.ProxyManager
	streams streams
	profile *os.File // the CPU profile being written ("pprof-start")
}

func (s *server) handle(req *Request, resp *Response) error {
	switch req.Op {
	case "init":
		if len(req.PKI) > 0 {
			p, err := kvproxy.ImportPKI(req.PKI)
			if err != nil {
				return err
			}
			s.pki = p
		}
		m, err := kvproxy.NewManager(req.Bind, s.pki)
		if err != nil {
			return err
		}
		s.manager = m
	case "start-target":
		root := req.Root
		if root == "" && len(req.Sockets) > 0 {
			root = filepath.Dir(req.Sockets[0])
		}
		if err := kvproxy.StartTarget(s.manager, req.Key, root, req.Sockets...); err != nil {
			return err
		}
		resp.Ports = s.manager.GetTargetListenerPorts(req.Key)
	case "start-source":
		if err := s.manager.StartSourceListener(req.Key, req.Addr, req.Ports, req.Dir); err != nil {
			return err
		}
		resp.Files = s.manager.GetSourceListenerFiles(req.Key)
	case "stop":
		s.manager.StopSourceListener(req.Key)
		s.manager.StopTargetListener(req.Key)
	case "usage":
		fds, err := kvproxy.OpenFDs()
		if err != nil {
			return err
		}
		resp.FDs, resp.Goroutines, resp.ProxyGoroutines = fds, kvproxy.Goroutines(), kvproxy.ProxyGoroutines()
	case "gc-off":
		debug.SetGCPercent(-1)
	case "gc-on":
		debug.SetGCPercent(100)
	case "refusals":
		resp.Refusals = s.log.Refusals(req.Key)
	case "bytes":
		b, err := kvproxy.ProxyBytes(req.Key)
		if err != nil {
			return err
		}
		resp.Bytes = b
	case "dial":
		c, err := net.DialTimeout("tcp", req.Addr, 3*time.Second)
		if err != nil {
			return err
		}
		c.Close()
	case "tlsdial":
		if s.pki == nil {
			return fmt.Errorf("no PKI")
		}
		refused, err := s.pki.Probe(req.Addr, kvproxy.Stranger(req.Stranger))
		if err != nil {
			return fmt.Errorf("%s: %w", req.Stranger, err)
		}
		resp.Refused = refused
	case "cpu":
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return err
		}
		resp.CPU = ru.Utime.Nano() + ru.Stime.Nano()
		resp.Switches = ru.Nvcsw + ru.Nivcsw
		resp.PID = os.Getpid()
		resp.Procs = runtime.GOMAXPROCS(0)
	case "procs":
		// The bench's modes: a node confined to one CPU would get one P (Go
		// sizes GOMAXPROCS from the affinity mask and follows it), so the
		// bench sets the P count of a node with cores to spare explicitly.
		if req.Procs > 0 {
			runtime.GOMAXPROCS(req.Procs)
		} else {
			runtime.SetDefaultGOMAXPROCS()
		}
		resp.Procs = runtime.GOMAXPROCS(0)
	case "io":
		n, err := kvproxy.UserSpaceBytes()
		if err != nil {
			return err
		}
		resp.UserBytes = n
	case "pprof-start":
		if s.profile != nil {
			return fmt.Errorf("a CPU profile is already running")
		}
		f, err := os.Create(req.Path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		s.profile = f
	case "pprof-stop":
		if s.profile == nil {
			return fmt.Errorf("no CPU profile running")
		}
		pprof.StopCPUProfile()
		err := s.profile.Close()
		s.profile = nil
		return err
	case "sink", "sinkwait", "send":
		return s.streams.handle(req, resp)
	default:
		return fmt.Errorf("unknown op %q", req.Op)
	}
	return nil
}
