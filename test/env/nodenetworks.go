package env

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/nodenet"
	"github.com/migranet/migranet/test/results"
	"github.com/migranet/migranet/test/sim"
)

// NodeNetworksMode says whether an environment's nodes get real networks (package nodenet):
// a namespace per node and per pod sandbox, the real CNI plugins and whereabouts.
type NodeNetworksMode string

const (
	// NodeNetworksRequired: real networks, and Start fails naming the missing privilege or
	// command when the machine cannot make them — unless MIGRANET_TEST_SKIP lists netns, which
	// simulates them instead (the suites' default).
	NodeNetworksRequired NodeNetworksMode = ""
	// NodeNetworksIfAvailable: real networks when the machine can make them, else the simulators,
	// saying why (make dev).
	NodeNetworksIfAvailable NodeNetworksMode = "if-available"
	// NodeNetworksSimulated: the Multus, bridge and whereabouts simulators (the benchmarks).
	NodeNetworksSimulated NodeNetworksMode = "simulated"
)

// NetnsSuite is the name MIGRANET_TEST_SKIP takes to run the suites on simulated node networks.
const NetnsSuite = "netns"

// envCount tells the environments of one process apart in namespace names.
var envCount atomic.Int32

// startNodeNetworks sets up the real networks of nodes nodes as mode asks, or returns nil and why
// for simulated ones. The nodes share this machine's kernel and its one neighbour table per family:
// it is sized for them first (nodenet.SizeNeighbourTables, raised only), or the probes of
// a few dozen nodes overflow it and read Unreachable.
func startNodeNetworks(ctx context.Context, c *cluster.Cluster, mode NodeNetworksMode, nodes int, progress io.Writer) (*sim.NodeNetworks, string, error) {
	if mode == NodeNetworksSimulated || (mode == NodeNetworksRequired && results.OptedOutNow(NetnsSuite)) {
		fmt.Fprintln(progress, "env: node networks simulated (Multus, bridge and whereabouts simulators)")
		return nil, "node networks simulated as asked", nil
	}
	prefix := fmt.Sprintf("mn%d%c", os.Getpid()%100000, 'a'+rune(envCount.Add(1)%26))
	if err := nodenet.Available(ctx, nodenet.NS(prefix+"-probe")); err != nil {
		if mode == NodeNetworksIfAvailable {
			fmt.Fprintf(progress, "env: no real node networks (%v); falling back to the Multus, bridge and whereabouts simulators\n", err)
			return nil, "no real node networks here: " + err.Error(), nil
		}
		return nil, "", fmt.Errorf("real node networks: %w (or set %s=%s to simulate them)", err, results.OptOutVar, NetnsSuite)
	}
	cgroups, err := nodenet.CgroupRoot()
	if err != nil {
		if mode == NodeNetworksIfAvailable {
			fmt.Fprintf(progress, "env: no real node networks (%v); falling back to the Multus, bridge and whereabouts simulators\n", err)
			return nil, "no real node networks here: " + err.Error(), nil
		}
		return nil, "", fmt.Errorf("real node networks: %w (or set %s=%s to simulate them)", err, results.OptOutVar, NetnsSuite)
	}
	if err := nodenet.SizeNeighbourTables(nodes, progress); err != nil {
		if mode == NodeNetworksIfAvailable {
			fmt.Fprintf(progress, "env: WARNING: %v; with many nodes the probes may overflow the neighbour table (the agents then report NeighbourTableFull)\n", err)
		} else {
			return nil, "", fmt.Errorf("real node networks: %w", err)
		}
	}
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(cluster.RepoRoot(), "test", "tools", "build.sh"), "cni").Output()
	if err != nil {
		return nil, "", fmt.Errorf("building the CNI plugins (test/tools/build.sh cni): %w", err)
	}
	kubeconfig, err := c.WriteKubeconfig("whereabouts", "whereabouts", "system:masters")
	if err != nil {
		return nil, "", err
	}
	n := &sim.NodeNetworks{
		Fabric:     &nodenet.Fabric{Prefix: prefix},
		Plugins:    &nodenet.Plugins{BinDir: strings.TrimSpace(string(out)), ConfDir: filepath.Join(c.Dir, "whereabouts.d")},
		APIServer:  strings.TrimPrefix(c.Config.Host, "https://"),
		CgroupRoot: cgroups,
	}
	if err := n.Plugins.WriteWhereaboutsConf(kubeconfig); err != nil {
		return nil, "", err
	}
	fmt.Fprintf(progress, "env: real node networks (namespaces %s-*), CNI plugins from %s\n", prefix, n.Plugins.BinDir)
	return n, "", nil
}
