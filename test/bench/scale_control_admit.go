package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

const (
	ctlVMIs       = 20  // running VMIs, spread over the nodes
	ctlAdmissions = 200 // migrations admitted (dry run), each beside one dry-run ConfigMap
)

// admission times ctlAdmissions dry-run creates of migrations of running VMIs through the API
// server (migranet's webhook judges each, with the paths of every node) and, interleaved, as many
// dry-run ConfigMap creates nothing judges.
func (a *syntheticAgents) admission(ctx context.Context, e *env.Env, r *ctlRun) error {
	ns := "scale"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: objectMeta(ns)}); err != nil {
		return err
	}
	for i := range ctlVMIs {
		node := a.nodes[(i*len(a.nodes))/ctlVMIs]
		if err := e.Client.Create(ctx, framework.VMI(ns, "vm"+strconv.Itoa(i), node, nil)); err != nil {
			return err
		}
	}
	// The webhook reads VMIs from its informer: wait for the last one to be admitted once.
	probe := framework.VMIM(ns, "warm", "vm"+strconv.Itoa(ctlVMIs-1), nil)
	if err := until(ctx, time.Minute, func() (bool, error) { return e.Client.Create(ctx, probe, client.DryRunAll) == nil, nil }); err != nil {
		return fmt.Errorf("a migration of a running VMI was never admitted: %v", e.Client.Create(ctx, probe, client.DryRunAll))
	}
	var admit, base []time.Duration
	refusal := ""
	for i := range ctlAdmissions {
		m := framework.VMIM(ns, "m"+strconv.Itoa(i), "vm"+strconv.Itoa(i%ctlVMIs), nil)
		t := time.Now()
		err := e.Client.Create(ctx, m, client.DryRunAll)
		admit = append(admit, time.Since(t))
		if err == nil {
			r.admitted++
		} else if refusal == "" {
			refusal = err.Error()
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c" + strconv.Itoa(i)}}
		t = time.Now()
		if err := e.Client.Create(ctx, cm, client.DryRunAll); err != nil {
			return err
		}
		base = append(base, time.Since(t))
	}
	r.admissions = len(admit)
	if refusal != "" {
		return fmt.Errorf("%d of %d migrations refused, the first: %s", len(admit)-r.admitted, len(admit), refusal)
	}
	r.admitP50, r.admitP99, r.baseP50 = quantile(admit, 0.5), quantile(admit, 0.99), quantile(base, 0.5)
	return nil
}

// quantile is the q-quantile of d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// mtuFailure is a failing path to peer as an agent reports a narrowed uplink.
func mtuFailure(peer string, now time.Time) v1beta1.PeerPath {
	since := microTime(now.Add(-time.Second))
	return v1beta1.PeerPath{Node: peer, Reason: v1beta1.PathMTU, Largest: 1294, Since: &since, AfterCheck: true,
		Message: "1500-byte frames do not arrive (largest that crossed: 1294)"}
}

func microTime(t time.Time) metav1.MicroTime { return metav1.NewMicroTime(t) }

// replicaPIDs are the manager replicas' processes.
func replicaPIDs(e *env.Env) []int {
	out := make([]int, 0, len(e.Replicas))
	for _, m := range e.Replicas {
		out = append(out, m.PID())
	}
	return out
}

// cpuOf is each process's CPU time so far, in clock ticks.
func cpuOf(pids []int) ([]int64, error) {
	out := make([]int64, len(pids))
	for i, pid := range pids {
		var err error
		if out[i], err = procCPU(pid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// processOf is the process whose command is name and whose arguments mention dir (this
// environment's): 0 when none.
func processOf(name, dir string) int {
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if strings.HasSuffix(args[0], "/"+name) || args[0] == name {
			if strings.Contains(string(b), dir) {
				return pid
			}
		}
	}
	return 0
}
