package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/env"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times and of /proc/stat (100 on Linux).
const clockTicks = 100

// healthyCondition is s's Healthy condition, nil without one.
func healthyCondition(s *v1beta1.Setting) *metav1.Condition {
	return meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionHealthy)
}

// procCPU is the CPU time pid has used (user + system), in clock ticks.
func procCPU(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command is in parentheses and may hold spaces: the fields after its closing one.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	k, err2 := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	return u + k, nil
}

// privateKiB is pid's private memory (Private_Clean + Private_Dirty): what it costs beyond the
// binary's pages every agent shares.
func privateKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && (f[0] == "Private_Clean:" || f[0] == "Private_Dirty:") {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, err
			}
			total += v
		}
	}
	return total, nil
}

// machineTicks is the machine's busy and total CPU time so far (/proc/stat's cpu line).
func machineTicks() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, err
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// agentCost measures the running agents over window: their CPU in millicores per node, their
// mean private memory in MiB, and the whole machine's busy share. Every node's agent must run.
func agentCost(ctx context.Context, e *env.Env, nodes int, window time.Duration) (milli, privMiB, busy float64, err error) {
	pids := e.ProbeAgents.PIDs()
	if len(pids) != nodes {
		return 0, 0, 0, fmt.Errorf("%d agent processes run, want one per node (%d)", len(pids), nodes)
	}
	before := map[string]int64{}
	for node, pid := range pids {
		if before[node], err = procCPU(pid); err != nil {
			return 0, 0, 0, err
		}
	}
	b0, t0, err := machineTicks()
	if err != nil {
		return 0, 0, 0, err
	}
	began := time.Now()
	if err := pause(ctx, window); err != nil {
		return 0, 0, 0, err
	}
	elapsed := time.Since(began).Seconds()
	b1, t1, err := machineTicks()
	if err != nil {
		return 0, 0, 0, err
	}
	var cpu, priv int64
	for node, pid := range pids {
		after, err := procCPU(pid)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("node %s's agent (restarted during the window?): %w", node, err)
		}
		cpu += after - before[node]
		kib, err := privateKiB(pid)
		if err != nil {
			return 0, 0, 0, err
		}
		priv += kib
	}
	milli = float64(cpu) / clockTicks / elapsed / float64(nodes) * 1000
	return milli, float64(priv) / float64(nodes) / 1024, float64(b1-b0) / float64(t1-t0), nil
}
