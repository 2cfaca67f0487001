package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/sim"
)

// proxyStreamGiB is the memory each stream of benchProxyStream moves, uncapped.
const proxyStreamGiB = 1

// benchProxyStream is `bench proxy-stream`: the CPU a lab migration's bytes cost per GiB on make
// dev's two paths, measured in one run on one fabric (two namespaces on a bridge, as two nodes'
// virt-handler sandboxes): the plain stand-in stream (sim.Stream.Start: the stand-in's source
// "QEMU" writing to the target's over TCP between the migration0 addresses) against the same
// stream through the patched proxy pair (sim.Stream.StartVia: unix socket → source labproxy →
// mTLS over migration0 → target labproxy → unix socket, as virt-handler's proxies carry
// libvirt's stream). CPU is this process's (both "QEMU" ends, in both runs) plus, through the
// pair, both labproxy processes'; the ratio is pair/plain. Needs root and the lab's migration
// proxy (vendor-patches/run.sh lab-proxy, built on first use).
func benchProxyStream() ([]string, error) {
	ctx := context.Background()
	fab, err := newNetnsFabric(ctx, 1)
	if err != nil {
		return []string{"bench proxy-stream: skipped: " + err.Error()}, nil
	}
	defer fab.Close()
	bin, err := sim.BuildLabProxy(ctx, os.Stderr)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mgb-proxy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ca, err := cluster.NewCA("kubevirt.io")
	if err != nil {
		return nil, err
	}
	certs, err := sim.WriteHandlerCerts(ca, filepath.Join(dir, "certs"))
	if err != nil {
		return nil, err
	}
	proxies := &sim.MigrationProxies{Binary: bin, Certs: certs, Dir: dir}
	defer proxies.Close()
	src, err := proxies.Node(fab.ns(0), "node-a")
	if err != nil {
		return nil, err
	}
	dst, err := proxies.Node(fab.ns(1), "node-b")
	if err != nil {
		return nil, err
	}
	plan := sim.StreamPlan{Memory: proxyStreamGiB << 30}
	opts := sim.MigrationOptions{ProgressTimeout: 30, CompletionTimeoutPerGiB: 150}

	plainCPU, plainTook, err := timedStream(func() (*sim.Stream, error) {
		s, err := sim.ListenStream(fab.ns(1), fabricAddr(1), false)
		if err == nil {
			s.Start(fab.ns(0), fabricAddr(0), fabricAddr(1), plan, opts, proxyStreamGiB)
		}
		return s, err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("the plain stream: %w", err)
	}
	pairCPU, pairTook, err := timedStream(func() (*sim.Stream, error) {
		sockets, err := proxies.SocketDir()
		if err != nil {
			return nil, err
		}
		s, err := sim.ListenStreamVia(dst, "bench-pair", sockets, false, false)
		if err == nil {
			s.StartVia(src, fabricAddr(1), plan, opts, proxyStreamGiB)
		}
		return s, err
	}, []*sim.NodeProxy{src, dst})
	if err != nil {
		return nil, fmt.Errorf("through the pair: %w", err)
	}
	perGiB := func(d time.Duration) float64 { return d.Seconds() / proxyStreamGiB }
	rate := func(d time.Duration) float64 { return float64(proxyStreamGiB<<10) / d.Seconds() }
	return []string{fmt.Sprintf("bench proxy-stream: %d GiB uncapped, CPU per GiB: plain stand-in stream %.2f s (%.0f MiB/s), through the patched proxy pair %.2f s (%.0f MiB/s; proxies and both ends), ratio %.2f",
		proxyStreamGiB, perGiB(plainCPU), rate(plainTook), perGiB(pairCPU), rate(pairTook), pairCPU.Seconds()/plainCPU.Seconds())}, nil
}

// timedStream runs the stream start makes to its end and returns the CPU it took (this process's
// and the proxies') and its wall time; a stream that did not complete is an error.
func timedStream(start func() (*sim.Stream, error), proxies []*sim.NodeProxy) (time.Duration, time.Duration, error) {
	cpu := func() (time.Duration, error) {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0, err
		}
		total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		for _, p := range proxies {
			c, err := p.CPU()
			if err != nil {
				return 0, err
			}
			total += c
		}
		return total, nil
	}
	before, err := cpu()
	if err != nil {
		return 0, 0, err
	}
	began := time.Now()
	s, err := start()
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	deadline := began.Add(5 * time.Minute)
	r := s.Report()
	for !r.Done && r.Failure == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		r = s.Report()
	}
	took := time.Since(began)
	if !r.Done {
		return 0, 0, fmt.Errorf("did not complete: %+v", r)
	}
	after, err := cpu()
	if err != nil {
		return 0, 0, err
	}
	return after - before, took, nil
}
