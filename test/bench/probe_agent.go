package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/migranet/migranet/netcontroller/nodeagent"
)

// agentCommand is the argument that makes the bench binary the measured probe agent:
// bench probe-agent -mode=probe|noop -peers=<file> -mtu=<bytes> -spread=<duration> [-listen=<addr:port>].
const agentCommand = "probe-agent"

// The probe agent's defaults (`migranet probe`), which the bench's agent uses too.
const (
	prTimeout = time.Second
	prTries   = 3
	prNetwork = "kubevirt/vm-migration-network-bench"
)

// agentMsg is what the agent prints, one JSON line each: its address once ready, one per round,
// and its peak RSS when its standard input ends.
type agentMsg struct {
	Addr    string        `json:",omitempty"`
	Elapsed time.Duration `json:",omitempty"` // the round's duration
	Sent    uint64        `json:",omitempty"` // probes the round sent (replies not counted)
	Healthy int           `json:",omitempty"` // peers whose both probes were answered
	Failed  []string      `json:",omitempty"` // "<node> <reason>" for each other peer
	HWMKiB  int64         `json:",omitempty"` // VmHWM at the end
}

// probeAgent is the measured agent, alone in its process: it opens its probe socket on -listen, answers probes (Prober.Serve) and, for every line on its standard input, runs one
// round over the peers in -peers (one addr:port a line, nodeagent.Prober.Round over -spread) or, with
// -mode=noop, sleeps -spread instead: the same process doing no probing.
// BENCH_PROBE_CPUPROFILE=<prefix> writes the CPU profile of each probing agent to
// <prefix>.<peers>-peers.<pid>.
func probeAgent(args []string) error {
	fs := flag.NewFlagSet(agentCommand, flag.ContinueOnError)
	mode := fs.String("mode", "probe", "probe: one Round per input line; noop: sleep -spread instead")
	peersFile := fs.String("peers", "", "file of the peers' addr:port, one a line")
	mtu := fs.Int("mtu", 9000, "the network's MTU: full-size probes fill it")
	spread := fs.Duration("spread", 2*time.Second, "each round's probes spread over this long")
	listen := fs.String("listen", "127.0.0.1:0", "the probe socket's address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mode != "probe" && *mode != "noop" {
		return fmt.Errorf("-mode: %q is neither probe nor noop", *mode)
	}
	peers, err := readPeers(*peersFile)
	if err != nil {
		return err
	}
	if prefix := os.Getenv("BENCH_PROBE_CPUPROFILE"); prefix != "" && *mode == "probe" {
		f, err := os.Create(fmt.Sprintf("%s.%d-peers.%d", prefix, len(peers), os.Getpid()))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	at, err := netip.ParseAddrPort(*listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	conn, err := nodeagent.Listen(at)
	if err != nil {
		return err
	}
	p := nodeagent.NewProber(conn, prNetwork, *mtu, prTimeout, prTries)
	go p.Serve()
	defer p.Close()
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(agentMsg{Addr: conn.LocalAddr().String()}); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var m agentMsg
		start, sent := time.Now(), p.Sent.Load()
		if *mode == "noop" {
			time.Sleep(*spread)
		} else {
			for _, r := range p.Round(context.Background(), peers, *spread) {
				if r.Reason == "" {
					m.Healthy++
				} else {
					m.Failed = append(m.Failed, r.Node+" "+r.Reason)
				}
			}
		}
		m.Elapsed, m.Sent = time.Since(start), p.Sent.Load()-sent
		if err := out.Encode(m); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	hwm, err := statusKiB("/proc/self/status", "VmHWM:")
	if err != nil {
		return err
	}
	return out.Encode(agentMsg{HWMKiB: hwm})
}

// readPeers reads a peers file: one addr:port a line, node i named peer-<i>.
func readPeers(file string) ([]nodeagent.Peer, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var peers []nodeagent.Peer
	for i, l := range strings.Fields(string(raw)) {
		ap, err := netip.ParseAddrPort(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		peers = append(peers, nodeagent.Peer{Node: fmt.Sprintf("peer-%04d", i), Addr: ap})
	}
	return peers, nil
}

// statusKiB is the value in kB of field (e.g. "VmHWM:") in a /proc/<pid>/status file.
func statusKiB(file, field string) (int64, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for l := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(l, field); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, file)
}
