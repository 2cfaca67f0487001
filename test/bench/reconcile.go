package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

const (
	recEdits    = 50
	recNodes    = 1000
	recVMIs     = 10000
	benchHandle = "migranet.io/bench-virt-handler"
)

// reconcile measures, with the real manager against the local cluster, how long a setting edit
// takes to reach the KubeVirt CR and its NAD (50 edits, p50/p99), with 3 nodes and then with
// 1,000 more kwok nodes, and the manager's RSS before and after adding 1,000 nodes and 10,000
// VMIs. The 1,000 extra nodes run no virt-handler (KubeVirt's nodePlacement keeps it on the first
// three), so the measure is the control loop's, not 1,000 simulated pod rollouts.
func reconcile() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-reconcile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	nodes := cluster.DefaultNodes(3)
	for i := range nodes {
		nodes[i].Labels = map[string]string{benchHandle: "true"}
	}
	// KubeVirt stays simulated: 10,000 VMIs would otherwise each get a virt-launcher pod.
	e, err := env.Start(ctx, env.Options{Dir: filepath.Join(dir, "cluster"), Nodes: nodes, SimulatedKubeVirt: true,
		NodeNetworks: env.NodeNetworksSimulated})
	if err != nil {
		return nil, err
	}
	defer e.Stop()
	if err := placeVirtHandlers(ctx, e); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	rssSmall, err := e.Manager.RSS()
	if err != nil {
		return nil, err
	}
	small, err := editLatencies(ctx, e, 1)
	if err != nil {
		return nil, err
	}
	specs := make([]cluster.NodeSpec, recNodes)
	for i := range specs {
		specs[i] = cluster.NodeSpec{Name: fmt.Sprintf("big-%04d", i), ClusterNetworks: []string{cluster.DefaultClusterNetwork}}
	}
	if err := parallel(recNodes, 16, func(i int) error { return e.Client.Create(ctx, cluster.NodeObject(specs[i])) }); err != nil {
		return nil, err
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: objectMeta("vms")}); err != nil {
		return nil, err
	}
	if err := parallel(recVMIs, 16, func(i int) error {
		return e.Client.Create(ctx, framework.VMI("vms", fmt.Sprintf("vm%05d", i), specs[i%recNodes].Name, nil))
	}); err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second) // let the manager's informers take it all in
	big, err := editLatencies(ctx, e, 2)
	if err != nil {
		return nil, err
	}
	runtime.GC()
	rssBig, err := e.Manager.RSS()
	if err != nil {
		return nil, err
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	return []string{
		fmt.Sprintf("bench reconcile: setting edit -> KubeVirt CR + NAD, %d edits: 3 nodes p50 %s p99 %s (goal p99 <= 1 s); %d nodes + %d VMIs p50 %s p99 %s (goal <= 2 s); p99 ratio %.2f",
			recEdits, small.p50, small.p99, recNodes+3, recVMIs, big.p50, big.p99, float64(big.p99)/float64(small.p99)),
		fmt.Sprintf("bench reconcile: manager RSS with 3 nodes, 0 VMIs %.0f MiB; with %d nodes + %d VMIs %.0f MiB (goal <= 150 MiB); ratio %.2f",
			mib(rssSmall), recNodes+3, recVMIs, mib(rssBig), float64(rssBig)/float64(rssSmall)),
	}, nil
}

// placeVirtHandlers keeps virt-handler on the nodes labelled benchHandle.
func placeVirtHandlers(ctx context.Context, e *env.Env) error {
	kv, err := e.KubeVirt(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(kv.DeepCopy())
	kv.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: map[string]string{benchHandle: "true"}}}
	if err := e.Client.Patch(ctx, kv, patch); err != nil {
		return err
	}
	return e.WaitKubeVirtAvailable(ctx, time.Minute)
}

type latencies struct{ p50, p99 time.Duration }

// editLatencies makes recEdits edits, each waiting until the KubeVirt CR names the new NAD and
// the NAD exists.
func editLatencies(ctx context.Context, e *env.Env, round int) (latencies, error) {
	var lat []time.Duration
	for i := range recEdits {
		value := fmt.Sprintf(`{"clusterNetwork":"migration","vlan":%d,"range":"10.%d.%d.0/24"}`, 100+i, 200+round, i)
		m, errs, _ := settings.ParseNetwork(value, field.NewPath("value"))
		if len(errs) > 0 {
			return latencies{}, errs.ToAggregate()
		}
		want := settings.NADName(m.Hash())
		s := &v1beta1.Setting{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
			return latencies{}, err
		}
		patch := client.MergeFrom(s.DeepCopy())
		s.Value = value
		start := time.Now()
		if err := e.Client.Patch(ctx, s, patch); err != nil {
			return latencies{}, err
		}
		for {
			kv, err := e.KubeVirt(ctx)
			nad := &nadv1.NetworkAttachmentDefinition{}
			if err == nil && settings.MigrationNetworkOf(kv) == want &&
				e.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: want}, nad) == nil {
				break
			}
			if time.Since(start) > time.Minute {
				return latencies{}, fmt.Errorf("edit %d not applied within a minute", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return latencies{p50: lat[len(lat)/2].Round(time.Millisecond), p99: lat[len(lat)*99/100].Round(time.Millisecond)}, nil
}
