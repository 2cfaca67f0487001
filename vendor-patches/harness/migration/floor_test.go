package migration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/netlab"
	"github.com/migranet/migranet/vendor-patches/harness/node"
)

// EnvFloorRelay names the splicefloor binary (vendor-patches/floor/splicefloor.c,
// built by run.sh bench with gcc): the bench's floor, not part of the product.
const EnvFloorRelay = "MIGRANET_VP_FLOOR_RELAY"

// EnvFloorPipe overrides the floor relay's pipe size in bytes (default 1 MiB,
// the patched proxy's), to try other sizes by hand.
const EnvFloorPipe = "MIGRANET_VP_FLOOR_PIPE"

// meter is one measured process of a path: a node or a floor relay.
type meter interface {
	// usage is the process's CPU seconds and context switches so far.
	usage(b testing.TB) (cpu, switches float64)
	// pid is its process id (the profile rounds attach strace and perf).
	pid(b testing.TB) int
}

type nodeMeter struct{ c *node.Client }

func (n nodeMeter) usage(b testing.TB) (float64, float64) {
	r, err := n.c.Do(node.Request{Op: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	return float64(r.CPU) / 1e9, float64(r.Switches)
}

func (n nodeMeter) pid(b testing.TB) int {
	r, err := n.c.Do(node.Request{Op: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	return r.PID
}

func nodeMeters(nodes []*node.Client) []meter {
	m := make([]meter, len(nodes))
	for i, c := range nodes {
		m[i] = nodeMeter{c}
	}
	return m
}

// floorRelay is one running splicefloor process.
type floorRelay struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, line by line; closed at its end
	done  chan struct{}
	port  int
}

// floorPair is a source relay (unix socket Sock -> TCP) and a target relay
// (TCP -> the unix socket it was given) in the lab's namespaces.
type floorPair struct {
	src, dst *floorRelay
	Sock     string
}

// startFloorPair starts the floor pair; the target relay dials sinkSock (in the
// target namespace) for every connection the source relay's socket, in dir,
// accepts.
func (e *env) startFloorPair(b testing.TB, dir, sinkSock string) *floorPair {
	b.Helper()
	bin := os.Getenv(EnvFloorRelay)
	if bin == "" {
		b.Fatalf("%s is not set: run this through vendor-patches/run.sh bench", EnvFloorRelay)
	}
	dst := startFloorRelay(b, bin, e.lab.Target, "tcp:"+e.lab.TargetMig+":0", "unix:"+sinkSock)
	sock := filepath.Join(dir, "floor.sock")
	src := startFloorRelay(b, bin, e.lab.Source, "unix:"+sock, "tcp:"+e.lab.TargetMig+":"+strconv.Itoa(dst.port))
	return &floorPair{src: src, dst: dst, Sock: sock}
}

func (p *floorPair) meters() []meter { return []meter{p.src, p.dst} }

func (p *floorPair) close() {
	p.src.close()
	p.dst.close()
}

func startFloorRelay(b testing.TB, bin, ns, listen, dial string) *floorRelay {
	b.Helper()
	argv := []string{bin, listen, dial}
	if s := os.Getenv(EnvFloorPipe); s != "" {
		argv = append(argv, s)
	}
	cmd := netlab.Exec(ns, argv...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &floorRelay{cmd: cmd, stdin: in, lines: make(chan string), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		_ = cmd.Wait()
		close(r.done)
	}()
	b.Cleanup(r.close)
	var port int
	if _, err := fmt.Sscanf(r.line(b), "port %d", &port); err != nil {
		b.Fatalf("floor relay %s %s: %v", listen, dial, err)
	}
	r.port = port
	return r
}

// line is the relay's next line of output (10 s at most).
func (r *floorRelay) line(b testing.TB) string {
	b.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			b.Fatalf("floor relay exited")
		}
		return l
	case <-time.After(10 * time.Second):
		b.Fatalf("floor relay: no answer in 10 s")
	}
	return ""
}

// pid is the relay's: "ip netns exec" execs it in place.
func (r *floorRelay) pid(testing.TB) int { return r.cmd.Process.Pid }

func (r *floorRelay) usage(b testing.TB) (float64, float64) {
	b.Helper()
	if _, err := io.WriteString(r.stdin, "cpu\n"); err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(r.line(b))
	if len(f) != 3 || f[0] != "cpu" {
		b.Fatalf("floor relay answered %q", f)
	}
	ns, err1 := strconv.ParseFloat(f[1], 64)
	sw, err2 := strconv.ParseFloat(f[2], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("floor relay answered %q", f)
	}
	return ns / 1e9, sw
}

// close ends the relay: stdin closed, killed with the test otherwise
// (netlab.Exec's parent-death signal); waits at most 5 s.
func (r *floorRelay) close() {
	_ = r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
}

// floored streams benchSize bytes through the floor pair p to a unix sink.
func (l *lab) floored(b *testing.B, p *floorPair, sinkPath, key string, during func() func()) float64 {
	if _, err := l.sinker.Do(node.Request{Op: "sink", Key: key, Network: "unix", Addr: sinkPath, Size: benchSize}); err != nil {
		b.Fatal(err)
	}
	var end func()
	if during != nil {
		end = during()
	}
	s, err := l.sender.Do(node.Request{Op: "send", Network: "unix", Addr: p.Sock, Size: benchSize})
	if err != nil {
		b.Fatal(err)
	}
	return finish(b, l.sinker, key, s.Start, end)
}
