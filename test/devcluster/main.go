// Command devcluster is `make dev`: it builds what is missing, starts the local control plane, the
// simulators and `migranet dev` (see test/env), writes the kubeconfig to .dev/kubeconfig, prints
// "migranet dev: ready" with commands to try, and runs until interrupted, then stops every process
// it started.
//
// Environment: DEV_NODES (default 3) kwok nodes; DEV_DIR (default .dev) state folder;
// DEV_KUBEVIRT=simulated leaves out KubeVirt's virt-api and virt-controller (run by default);
// DEV_NODE_NETWORKS=simulated uses the Multus, bridge and whereabouts simulators even where real
// node networks could run (the fallback of a machine that cannot make them): the paths then read
// "not measured on simulated networks"; HARVESTER=1 makes the cluster a Harvester stand-in
// (Harvester's CRDs, its empty vm-migration-network setting, a witness node and the simulator of
// Harvester's controller), where migranet runs in Harvester mode; HCO=1 makes it an HCO install
// (HCO's HyperConverged CRD and CR, the KubeVirt CR it owns and the simulator of HCO's KubeVirt
// handler), where migranet runs in HCO mode. DEV_MIGRATION_PROXIES=plain streams migrations over
// plain TCP instead of through the patched migration proxy pair (vendor-patches' labproxy, built by
// `vendor-patches/run.sh lab-proxy` when missing; a build that fails falls back to plain TCP, and
// the ready line's "migrations:" says which runs).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/sim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "migranet dev:", err)
		os.Exit(1)
	}
}

func run() error {
	nodes := 3
	if v := os.Getenv("DEV_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5000 {
			return fmt.Errorf("DEV_NODES=%q: want a whole number from 1 to 5000", v)
		}
		nodes = n
	}
	dir := os.Getenv("DEV_DIR")
	if dir == "" {
		dir = filepath.Join(cluster.RepoRoot(), ".dev")
	}
	simulated := false
	switch v := os.Getenv("DEV_KUBEVIRT"); v {
	case "", "real":
	case "simulated":
		simulated = true
	default:
		return fmt.Errorf("DEV_KUBEVIRT=%q: want real (default) or simulated", v)
	}
	networks := env.NodeNetworksIfAvailable
	switch v := os.Getenv("DEV_NODE_NETWORKS"); v {
	case "", "real":
	case "simulated":
		networks = env.NodeNetworksSimulated
	default:
		return fmt.Errorf("DEV_NODE_NETWORKS=%q: want real (default, when the machine can) or simulated", v)
	}
	harvester := false
	switch v := os.Getenv("HARVESTER"); v {
	case "", "0":
	case "1":
		harvester = true
	default:
		return fmt.Errorf("HARVESTER=%q: want 1 (a Harvester stand-in, migranet in Harvester mode) or 0", v)
	}
	hco := false
	switch v := os.Getenv("HCO"); v {
	case "", "0":
	case "1":
		hco = true
	default:
		return fmt.Errorf("HCO=%q: want 1 (an HCO stand-in, migranet in HCO mode) or 0", v)
	}
	proxies := env.ProxiesIfBuilt
	switch v := os.Getenv("DEV_MIGRATION_PROXIES"); v {
	case "", "patched":
	case "plain":
		proxies = env.ProxiesPlain
	default:
		return fmt.Errorf("DEV_MIGRATION_PROXIES=%q: want patched (default: the patched proxy pair when it builds) or plain", v)
	}
	if hco && harvester {
		return fmt.Errorf("HARVESTER=1 and HCO=1: a cluster is one or the other")
	}
	nodeSpecs := cluster.DefaultNodes(nodes)
	if harvester {
		nodeSpecs = append(nodeSpecs, cluster.NodeSpec{Name: "witness-1", Witness: true})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	e, err := env.Start(ctx, env.Options{Dir: filepath.Join(dir, "cluster"), Nodes: nodeSpecs, Progress: os.Stderr,
		SimulatedKubeVirt: simulated, NodeNetworks: networks, Harvester: harvester, HCO: hco,
		HandlerBandwidth: devStreamBandwidth, HandlerDirtyRate: devDirtyRate, MigrationProxies: proxies})
	if err != nil {
		return err
	}
	defer e.Stop()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	data, err := os.ReadFile(e.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return err
	}
	rel, _ := filepath.Rel(cluster.RepoRoot(), kubeconfig)
	kubevirt := "KubeVirt " + cluster.KubeVirtVersion + " virt-api at " + e.VirtAPIURL() + " (webhooks, subresources.kubevirt.io) and virt-controller, virt-handler stand-in"
	virtctl := fmt.Sprintf("  virtctl:    %s\n", e.Binaries.Virtctl)
	tryVirtctl := "  virtctl migrate -n <namespace> <vm>   # a VirtualMachine's VMI; virt-api creates the migration\n"
	nodeNetworks := "real: a network namespace per node and per pod, the real CNI plugins (bridge, macvlan, ipvlan, tuning, bandwidth, plugin lists chained) and whereabouts, the probe agents"
	if e.NodeNetworks == nil {
		nodeNetworks = "simulated: migration paths are not measured (see the env: line above)"
	}
	if simulated {
		kubevirt = "KubeVirt simulated (no virt-api, no virt-controller)"
		virtctl, tryVirtctl = "", "" // no virt-api to serve its subresources
	}
	try := fmt.Sprintf(`  kubectl get settings.migranet.io
  kubectl edit settings.migranet.io vm-migration-network
      # value: {"clusterNetwork":"%s","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}
`, cluster.DefaultClusterNetwork)
	if harvester {
		try = fmt.Sprintf(`  kubectl edit settings.harvesterhci.io vm-migration-network     # Harvester mode: Harvester's setting decides
      # value: {"clusterNetwork":"%s","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}
  kubectl get settings.migranet.io vm-migration-network -o yaml  # migranet's mirror: source, nodes, capacity, paths
  kubectl annotate node node-3 --overwrite %s%s=1500  # narrow an uplink
`, cluster.DefaultClusterNetwork, cluster.UplinkMTUAnnotationPrefix, cluster.DefaultClusterNetwork)
		nodes++
	}
	mode := "migranet's own (its setting writes the NAD and the KubeVirt CR)"
	switch {
	case harvester:
		mode = "Harvester (Harvester's setting decides; migranet mirrors it)"
	case hco:
		mode = "HCO (HyperConverged " + cluster.KubeVirtNamespace + "/" + sim.HyperConvergedName + " owns the KubeVirt CR; migranet writes only its liveMigrationConfig.network)"
		try += fmt.Sprintf(`  kubectl get hyperconverged -n %s %s -o jsonpath='{.spec.liveMigrationConfig}'   # what migranet writes
  kubectl patch hyperconverged -n %s %s --type merge -p '{"spec":{"liveMigrationConfig":{"network":"<a NAD>"}}}'   # as the console does
`, cluster.KubeVirtNamespace, sim.HyperConvergedName, cluster.KubeVirtNamespace, sim.HyperConvergedName)
	}
	fmt.Printf(`
migranet dev: ready in %s — %d kwok nodes, KubeVirt CR Available, migranet webhooks at %s
  mode:       %s
  kubevirt:   %s
  networks:   %s
  migrations: %s
  logs:       %s
  kubectl:    %s
%s
Try:
  export KUBECONFIG=%s
  kubectl get nodes,kubevirt -A
%s  kubectl get pods -n kubevirt -l kubevirt.io=virt-handler -w
%s
Ctrl-C stops every process this started.
`, time.Since(began).Round(time.Second), nodes, fmt.Sprintf("https://%s (a Service in front of %d replicas)", e.Service.Addr(), len(e.Replicas)),
		mode, kubevirt, nodeNetworks, e.MigrationPath(), e.Dir, e.Binaries.Kubectl, virtctl, rel, try, tryVirtctl)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "migranet dev: stopping")
			return nil
		case <-time.After(2 * time.Second):
			if err := e.Check(); err != nil {
				return err
			}
		}
	}
}

// On make dev's real node networks a migration streams its memory over migration0 at most this
// fast while its guest dirties memory this fast: a 128Mi VMI takes about 2.3 s (128 MiB at 64
// MiB/s, then the 16 MiB dirtied meanwhile), a time `migranet status` shows. The annotations
// handler.sim.migranet.io/bandwidth and dirty-rate change them per VM or migration.
const (
	devStreamBandwidth int64 = 64 << 20
	devDirtyRate       int64 = 8 << 20
)
