package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/cmd/migranet/drainplan"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
)

// Values of --metrics besides a URL.
const (
	metricsVirtHandler = "virt-handler"
	metricsNone        = "none"
)

// virtHandlerMetricsPort is where virt-handler serves /metrics (https, KubeVirt's
// kubevirt-prometheus-metrics Service targets it).
const virtHandlerMetricsPort = "8443"

// metricsTimeout bounds each metrics read: a virt-handler that does not answer costs the plan
// this much, once, in parallel with the others.
const metricsTimeout = 3 * time.Second

// readDrainCluster reads what the plan of node needs: the node (an unknown one is a usage error
// naming the nodes), every VMI and VMIM, the KubeVirt CR, and the metrics of source.
func readDrainCluster(ctx context.Context, c client.Client, cfg *rest.Config, kubevirtNamespace, node, source string) (*drainCluster, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	d := &drainCluster{}
	var names []string
	for i := range nodes.Items {
		names = append(names, nodes.Items[i].Name)
		if nodes.Items[i].Name == node {
			d.node = &nodes.Items[i]
		}
	}
	if d.node == nil {
		return nil, usageError{unknownNode(node, names)}
	}
	vmis := &kubevirtv1.VirtualMachineInstanceList{}
	if err := c.List(ctx, vmis); err != nil {
		return nil, fmt.Errorf("listing VirtualMachineInstances in all namespaces: %w", err)
	}
	d.vmis = vmis.Items
	vmims := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := c.List(ctx, vmims); err != nil {
		return nil, fmt.Errorf("listing VirtualMachineInstanceMigrations in all namespaces: %w", err)
	}
	d.vmims = vmims.Items
	kv, err := clusterread.KubeVirtCR(ctx, c, kubevirtNamespace)
	if err != nil {
		return nil, fmt.Errorf("reading the KubeVirt CR: %w", err)
	}
	if kv == nil {
		return nil, usageError{noKubeVirt(kubevirtNamespace)}
	}
	d.kubevirt = kv
	if len(d.onNode()) == 0 {
		return nil, usageError{fmt.Sprintf("--drain %s: no VirtualMachineInstance runs on node %s: there is nothing to plan (kubectl get vmi -A -o wide shows where VMIs run)", node, node)}
	}
	d.metrics = readMetrics(ctx, cfg, c, kubevirtNamespace, source)
	d.harvester, _ = harvesterCluster(ctx, c)
	return d, nil
}

// noKubeVirt says that no KubeVirt CR is in namespace, the one --kubevirt-namespace names: the
// plan would read KubeVirt's defaults for the cluster's limits and eviction strategy, so it names
// the flag and where KubeVirt lives in each mode instead.
func noKubeVirt(namespace string) string {
	return fmt.Sprintf("--%s %s: no KubeVirt CR in namespace %s, so the drain's limits and eviction strategy cannot be read; "+
		"pass the namespace KubeVirt runs in (harvester-system on Harvester, the HyperConverged CR's namespace under HCO; kubectl get kubevirt -A)",
		kubevirtNamespaceFlag, namespace, namespace)
}

// usageError is a mistake in what was asked, not a failure to read: exit status 2 all the same,
// without the advice about the cluster.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// unknownNode says that node is none of names, with the closest name when one is close.
func unknownNode(node string, names []string) string {
	msg := fmt.Sprintf("--drain %s: no such node", node)
	names = slices.Sorted(slices.Values(names))
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(node, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", best)
	}
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	return msg + "; the nodes are " + strings.Join(names, ", ") + " (kubectl get nodes)"
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// readMetrics reads KubeVirt's metrics from source: every virt-handler's /metrics through the API
// server's pod proxy (metricsVirtHandler: get on pods/proxy in the KubeVirt namespace), a URL in
// Prometheus' text format (a Prometheus server's /federate, or any /metrics), or nothing
// (metricsNone). A source that cannot be read gives a set that says why.
func readMetrics(ctx context.Context, cfg *rest.Config, c client.Reader, kubevirtNamespace, source string) *drainplan.Metrics {
	switch {
	case source == metricsNone:
		return drainplan.NewMetrics("no source (--metrics none)")
	case strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://"):
		m := drainplan.NewMetrics(source)
		ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
		if err != nil {
			m.From = fmt.Sprintf("%s (unreadable: %v)", source, err)
			return m
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			m.From = fmt.Sprintf("%s (unreadable: %v)", source, err)
			return m
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			m.From = fmt.Sprintf("%s (unreadable: HTTP %s)", source, resp.Status)
			return m
		}
		if _, err := m.Parse(resp.Body); err != nil {
			m.From = fmt.Sprintf("%s (unreadable: %v)", source, err)
			return m
		}
		m.Sources = 1
		return m
	}
	m := drainplan.NewMetrics("virt-handler's /metrics (API server pod proxy)")
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(kubevirtNamespace), client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}); err != nil {
		m.From = fmt.Sprintf("virt-handler's /metrics (not read: listing virt-handler pods: %v)", err)
		return m
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		m.From = fmt.Sprintf("virt-handler's /metrics (not read: %v)", err)
		return m
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed []string
	read := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
			defer cancel()
			body, err := cs.CoreV1().Pods(p.Namespace).ProxyGet("https", p.Name, virtHandlerMetricsPort, "metrics", nil).DoRaw(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				_, err = m.Parse(io.Reader(bytes.NewReader(body)))
			}
			if err != nil {
				failed = append(failed, p.Spec.NodeName+": "+metricsReadFailure(err, ctx.Err() != nil, kubevirtNamespace))
				return
			}
			read++
		}()
	}
	wg.Wait()
	m.Sources = read
	slices.Sort(failed)
	if len(failed) > 0 {
		if len(failed) > 3 {
			failed = append(failed[:3], fmt.Sprintf("and %d more", len(failed)-3))
		}
		m.From = fmt.Sprintf("virt-handler's /metrics through the API server's pod proxy (%d of %d read; %s)", read, read+len(failed), strings.Join(failed, "; "))
	}
	return m
}

// metricsReadFailure says why virt-handler's /metrics could not be read through the pod proxy:
// the RBAC the reader lacks only when RBAC refused it (a 403 can also come from the proxied
// destination or a network filter on the way, which no grant fixes), the deadline when it passed,
// else the error's first line.
func metricsReadFailure(err error, timedOut bool, kubevirtNamespace string) string {
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), `cannot get resource "pods/proxy"`):
		return "forbidden: needs get on pods/proxy in " + kubevirtNamespace
	case timedOut:
		return "no answer within " + metricsTimeout.String()
	case apierrors.IsForbidden(err):
		return "refused (403) on the way to the pod, not by RBAC: " + firstLine(err.Error())
	}
	return firstLine(err.Error())
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
