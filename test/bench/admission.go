package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/migranet/migranet/test/cluster"
)

const (
	admRequests = 4000 // per case and round
	admWorkers  = 4
	admRounds   = 27
)

// benchAdmission measures VMIM AdmissionReviews per second over HTTPS with keep-alive against
// migranet's real validator, its cache filled from a real API server (1,000 nodes, 5,000 VMIs
// and 5,000 VMIMs, one in ten in flight; the migration network configured and Ready), in two
// cases, and against a no-op validator served the same way (the ceiling):
//   - easy: the VMI has no nodeSelector and the VMIM no addedNodeSelector; the first node fits;
//   - hard: nodeSelector + addedNodeSelector + required node affinity + a toleration + the target
//     pod's requests, and every node but the last in admission's order fails one constraint
//     (cordoned, a selector label or the cluster network missing, an untolerated taint, the
//     affinity, no memory left), the scheduler-grade worst case.
//
// Each case sends three creates for one cancel of an in-flight pre-copy migration, from a client
// in a separate process (as the API server is): the webhook server's own CPU and garbage are then
// measured alone. The cases run interleaved in admRounds rounds, in a rotating order, each round
// after a garbage collection (so no case inherits another's garbage). Each line gives min/median/max
// of reviews/s over the rounds, the median p50 and p99 (and the worst p99), and the server's CPU
// time and allocations per review. A case's ratio is the median over the rounds of its reviews/s
// over the no-op's in the same round: the API server, etcd and kwok share the machine, and pairing
// cancels their drift. BENCH_VERBOSE=1 prints every round.
func benchAdmission() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-admission-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster")})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if err := populate(ctx, c); err != nil {
		return nil, err
	}
	url, caPEM, stop, err := serveWebhooks(ctx, c)
	if err != nil {
		return nil, err
	}
	defer stop()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		return nil, err
	}
	easy, err := bodiesFile(dir, "easy", nil)
	if err != nil {
		return nil, err
	}
	hard, err := bodiesFile(dir, "hard", map[string]string{zoneLabel: "z1"})
	if err != nil {
		return nil, err
	}
	vmimURL := url + "/validate-kubevirt-io-v1-virtualmachineinstancemigration"
	cases := []struct {
		name, url, bodies string
	}{
		{"no-op", url + noopPath, hard},
		{"easy", vmimURL, easy},
		{"hard", vmimURL, hard},
	}
	verbose := os.Getenv("BENCH_VERBOSE") != ""
	results := make([][]driveResult, len(cases))
	for round := range admRounds {
		for k := range cases {
			i := (round + k) % len(cases)
			runtime.GC()
			res, err := drive(ctx, caFile, cases[i].url, cases[i].bodies)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", cases[i].name, round+1, err)
			}
			results[i] = append(results[i], res)
			if verbose {
				fmt.Fprintf(os.Stderr, "admission round %d %s: %.0f reviews/s, p50 %s, p99 %s, %s CPU/review\n",
					round+1, cases[i].name, res.rps, res.p50, res.p99, res.cpu)
			}
		}
	}
	ceiling := summarize(results[0])
	lines := []string{fmt.Sprintf("bench admission no-op: VMIM validator admitting everything, the ceiling: %s", ceiling)}
	for i, cs := range cases[1:] {
		s := summarize(results[i+1])
		ratio := pairedRatio(results[i+1], results[0])
		verdict := "meets"
		if ratio < 0.9 || s.p99 > 5*time.Millisecond {
			verdict = "MISSES"
		}
		lines = append(lines, fmt.Sprintf("bench admission %s: %d nodes + %d VMIs + %d VMIMs cached, network Ready, %d requests x %d workers x %d rounds "+
			"over HTTPS keep-alive (3 creates : 1 cancel): %s; ratio %.2f of the no-op ceiling (median of %d paired rounds; goal >= 0.9), "+
			"CPU per review %.2fx the no-op's, p99 goal <= 5 ms: %s",
			cs.name, admNodes, admVMIs, admVMIs, admRequests, admWorkers, admRounds, s, ratio, admRounds, float64(s.cpu)/float64(ceiling.cpu), verdict))
	}
	return lines, nil
}

// pairedRatio is the median over the rounds of rs[i]'s reviews/s over base[i]'s.
func pairedRatio(rs, base []driveResult) float64 {
	v := make([]float64, len(rs))
	for i := range rs {
		v[i] = rs[i].rps / base[i].rps
	}
	slices.Sort(v)
	return v[len(v)/2]
}

type driveResult struct {
	rps      float64
	p50, p99 time.Duration
	cpu      time.Duration // the process's user + system time per review
	allocs   float64       // per review, whole process
}

type summary struct {
	rps            [3]float64 // min, median, max
	p50, p99, p99w time.Duration
	cpu            time.Duration
	allocs         float64
}

func (s summary) String() string {
	return fmt.Sprintf("%.0f/%.0f/%.0f reviews/s (min/median/max), p50 %s, p99 %s (worst %s), %s CPU and %.0f allocations per review",
		s.rps[0], s.rps[1], s.rps[2], s.p50, s.p99, s.p99w, s.cpu, s.allocs)
}

func summarize(rs []driveResult) summary {
	median := func(f func(driveResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rps := make([]float64, len(rs))
	var worst time.Duration
	for i, r := range rs {
		rps[i] = r.rps
		worst = max(worst, r.p99)
	}
	slices.Sort(rps)
	return summary{
		rps:  [3]float64{rps[0], rps[len(rps)/2], rps[len(rps)-1]},
		p50:  time.Duration(median(func(r driveResult) float64 { return float64(r.p50) })).Round(time.Microsecond),
		p99:  time.Duration(median(func(r driveResult) float64 { return float64(r.p99) })).Round(time.Microsecond),
		p99w: worst.Round(time.Microsecond), allocs: median(func(r driveResult) float64 { return r.allocs }),
		cpu: time.Duration(median(func(r driveResult) float64 { return float64(r.cpu) })).Round(100 * time.Nanosecond),
	}
}

// bodiesFile writes into dir the reviews one case cycles through (see reviews) and returns the
// file.
func bodiesFile(dir, vmiName string, added map[string]string) (string, error) {
	bs, err := reviews(vmiName, added)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(bs)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, vmiName+"-reviews.json")
	return file, os.WriteFile(file, raw, 0o600)
}

// drive runs one round of a case: a separate client process (admissionClient, as the API server
// is one) sends admRequests reviews of bodies from admWorkers keep-alive workers. The CPU time and
// allocations are this process's, the webhook server's, over the round.
func drive(ctx context.Context, caFile, url, bodies string) (driveResult, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	out, err := exec.CommandContext(ctx, os.Args[0], clientCommand, url, caFile, bodies).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return driveResult{}, fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		return driveResult{}, err
	}
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&after)
	var res clientResult
	if err := json.Unmarshal(out, &res); err != nil {
		return driveResult{}, fmt.Errorf("the client's answer %q: %w", out, err)
	}
	return driveResult{rps: res.RPS, p50: res.P50, p99: res.P99, cpu: cpu / admRequests,
		allocs: float64(after.Mallocs-before.Mallocs) / admRequests}, nil
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
