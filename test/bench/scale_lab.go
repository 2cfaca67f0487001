package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
)

// The scale-lab sizes: make dev's lab at 100 nodes, against 10 nodes as the baseline.
var labSizes = []int{10, 100}

// labValue is the migration network the lab runs (make dev's suggested value).
const labValue = `{"clusterNetwork":"` + cluster.DefaultClusterNetwork + `","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`

// labRun is what one lab size measured.
type labRun struct {
	nodes               int
	interval            time.Duration
	verified            time.Duration // value set → every pair verified
	agentMilli          float64       // the agents' CPU, millicores per node, over two rounds
	agentPrivMiB        float64       // an agent's private memory, mean
	machineBusy         float64       // the whole machine's busy share over the same window
	named               time.Duration // uplink narrowed → Healthy names the node
	allFailing          time.Duration // uplink narrowed → every pair of the node failing
	falseFailures       int
	narrowed, summaryAt string
}

// benchScaleLab runs make dev's lab (real node networks, a network namespace per node, the real
// CNI plugins and whereabouts, the real probe agents as processes, KubeVirt's virt-api and
// virt-controller) at 10 and then 100 nodes on this machine, with the agents' arguments the lab
// gives that size (env.ProbeArgsFor), and measures: how long after the migration network is set
// every pair is verified; what each node's agent costs (CPU over two rounds, private memory) and
// how busy the machine is; and, with one node's uplink narrowed below the network's MTU, how long
// until Healthy names it and until every one of its pairs fails, and whether any other pair ever
// failed (a false failure fails the measure, as does a node not named within one round).
func benchScaleLab() ([]string, error) {
	var runs []labRun
	for _, n := range labSizes {
		r, err := scaleLab(n)
		if err != nil {
			return nil, fmt.Errorf("%d nodes: %w", n, err)
		}
		runs = append(runs, r)
	}
	base, big := runs[0], runs[len(runs)-1]
	line := func(r labRun) string {
		return fmt.Sprintf("%d nodes (rounds every %s): %d/%d pairs verified %.0f s after the value; agents %.1f millicores and %.1f MiB private each, machine %.0f%% busy; %s's uplink narrowed: named after %.1f s, its %d pairs all failing after %.1f s, %d false failures",
			r.nodes, r.interval, r.nodes*(r.nodes-1)/2, r.nodes*(r.nodes-1)/2, r.verified.Seconds(), r.agentMilli, r.agentPrivMiB, 100*r.machineBusy,
			r.narrowed, r.named.Seconds(), r.nodes-1, r.allFailing.Seconds(), r.falseFailures)
	}
	return []string{
		"bench scale-lab: " + line(big),
		"bench scale-lab: baseline " + line(base),
		fmt.Sprintf("bench scale-lab: per node at %d against %d nodes: agent CPU %.2f×, agent memory %.2f×; time to name a narrowed uplink %.2f× (one round: %.2f of it)",
			big.nodes, base.nodes, big.agentMilli/base.agentMilli, big.agentPrivMiB/base.agentPrivMiB, big.named.Seconds()/base.named.Seconds(), big.named.Seconds()/big.interval.Seconds()),
	}, nil
}

// scaleLab brings up a lab of n nodes and measures it (benchScaleLab).
func scaleLab(n int) (labRun, error) {
	r := labRun{nodes: n}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-scale-lab-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	args, _ := env.ProbeArgsFor(n)
	for _, a := range args {
		var s int
		if _, err := fmt.Sscanf(a, "--interval=%ds", &s); err == nil {
			r.interval = time.Duration(s) * time.Second
		}
	}
	e, err := env.Start(ctx, env.Options{Dir: filepath.Join(dir, "cluster"), Nodes: cluster.DefaultNodes(n),
		MigrationProxies: env.ProxiesPlain})
	if err != nil {
		return r, err
	}
	defer e.Stop()
	began := time.Now()
	if err := setValue(ctx, e, v1beta1.MigrationNetwork, labValue); err != nil {
		return r, err
	}
	pairs := int32(n * (n - 1) / 2)
	if err := until(ctx, 15*time.Minute, func() (bool, error) {
		s, err := networkSetting(ctx, e)
		return err == nil && s.Status.Paths != nil && s.Status.Paths.Verified == pairs, err
	}); err != nil {
		return r, fmt.Errorf("the %d pairs were never all verified: %w", pairs, err)
	}
	r.verified = time.Since(began)
	if r.agentMilli, r.agentPrivMiB, r.machineBusy, err = agentCost(ctx, e, n, 2*r.interval); err != nil {
		return r, err
	}
	r.narrowed = fmt.Sprintf("node-%d", n/2)
	return r, narrowOne(ctx, e, &r)
}

// narrowOne narrows r.narrowed's uplink to 1300 (below the network's 1500) and times the naming,
// watching every status write for a failure of another pair.
func narrowOne(ctx context.Context, e *env.Env, r *labRun) error {
	mentions := regexp.MustCompile(`\b` + regexp.QuoteMeta(r.narrowed) + `\b`)
	began := time.Now()
	if err := uplink(ctx, e, r.narrowed, 1300); err != nil {
		return err
	}
	// A failure between two other nodes: each status write's failures are the worst ten, the
	// narrowed node's first, so its count is checked as well (no more failing pairs than its own).
	check := func(s *v1beta1.Setting) {
		p := s.Status.Paths
		if p == nil {
			return
		}
		for _, f := range p.Failures {
			if f.From != r.narrowed && f.To != r.narrowed {
				r.falseFailures++
			}
		}
		if p.Failing > int32(r.nodes-1) {
			r.falseFailures += int(p.Failing) - (r.nodes - 1)
		}
	}
	if err := until(ctx, 2*r.interval+30*time.Second, func() (bool, error) {
		s, err := networkSetting(ctx, e)
		if err != nil {
			return false, err
		}
		check(s)
		c := healthyCondition(s)
		if r.named == 0 && c != nil && c.Status == "False" && mentions.MatchString(c.Message) {
			r.named = time.Since(began)
		}
		if p := s.Status.Paths; r.named != 0 && p != nil && p.Failing == int32(r.nodes-1) {
			r.allFailing, r.summaryAt = time.Since(began), p.Summary
			return true, nil
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("%s's narrowed uplink: named after %s, its %d pairs never all failing: %w", r.narrowed, r.named, r.nodes-1, err)
	}
	switch {
	case r.falseFailures > 0:
		return fmt.Errorf("%d false failures (pairs without %s) while its uplink was narrowed", r.falseFailures, r.narrowed)
	case r.named > r.interval+10*time.Second:
		return fmt.Errorf("%s named %.1f s after its uplink narrowed: not within one round (%s) and the status write", r.narrowed, r.named.Seconds(), r.interval)
	}
	return nil
}

// networkSetting reads the vm-migration-network setting.
func networkSetting(ctx context.Context, e *env.Env) (*v1beta1.Setting, error) {
	s := &v1beta1.Setting{}
	return s, e.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)
}
