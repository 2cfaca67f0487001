package clusterread

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
)

// ServiceRanges returns the cluster's Service IP ranges: the spec.cidrs of every ServiceCIDR
// (networking.k8s.io/v1, served since Kubernetes 1.33) read through cached, and the ClusterIPs of
// Service default/kubernetes read through api (the first address of each family's range: where
// ServiceCIDRs are not served, the only trace of --service-cluster-ip-range the API shows), each
// as a single address unless a ServiceCIDR holds it already; without api, the ServiceCIDRs
// alone. Entries that fail to parse are skipped.
//
// It gives up after serviceRangesWait: a cache whose ServiceCIDR informer cannot sync (its RBAC
// not applied yet) would otherwise hold the setting webhook until the API server's timeout.
func ServiceRanges(ctx context.Context, cached, api client.Reader) ([]netip.Prefix, error) {
	ctx, cancel := context.WithTimeout(ctx, serviceRangesWait)
	defer cancel()
	var out []netip.Prefix
	list := &networkingv1.ServiceCIDRList{}
	if err := cached.List(ctx, list); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing ServiceCIDRs: %w", err)
	}
	for _, s := range list.Items {
		for _, c := range s.Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	if api == nil {
		return out, nil
	}
	svc := &corev1.Service{}
	if err := api.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, svc); err != nil {
		if apierrors.IsNotFound(err) && len(out) > 0 {
			return out, nil
		}
		return nil, fmt.Errorf("reading Service default/kubernetes: %w", err)
	}
	known := len(out)
	for _, ip := range svc.Spec.ClusterIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil || slices.ContainsFunc(out[:known], func(p netip.Prefix) bool { return p.Contains(a) }) {
			continue
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// VirtHandlerAddrs returns the pod-network addresses of the virt-handler pods in namespace, read
// through r (the manager's cache holds exactly those pods): the pod network's own addresses on
// whatever CNI, where nodes' spec.podCIDRs may be empty (Calico, Cilium).
func VirtHandlerAddrs(ctx context.Context, r client.Reader, namespace string) ([]settings.PodAddr, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}); err != nil {
		return nil, fmt.Errorf("listing virt-handler pods: %w", err)
	}
	var out []settings.PodAddr
	for i := range pods.Items {
		p := &pods.Items[i]
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				out = append(out, settings.PodAddr{Pod: p.Name, Node: p.Spec.NodeName, Addr: a})
			}
		}
	}
	return out, nil
}

// OwnNetworks reads what a range may not overlap besides the nodes' pod ranges: the Service
// ranges (ServiceRanges, through cached and api) and the virt-handlers' pod addresses in
// kubevirtNamespace (VirtHandlerAddrs, through cached). What cannot be read is left out and named
// in missed ("" when nothing is): the setting webhook warns with it, the settings controller logs
// it, and both judge the range without it.
func OwnNetworks(ctx context.Context, cached, api client.Reader, kubevirtNamespace string) (services []netip.Prefix, pods []settings.PodAddr, missed string) {
	var miss []string
	services, err := ServiceRanges(ctx, cached, api)
	if err != nil {
		miss = append(miss, "the cluster's Service ranges ("+err.Error()+")")
	}
	if pods, err = VirtHandlerAddrs(ctx, cached, kubevirtNamespace); err != nil {
		miss = append(miss, "the virt-handlers' pod addresses ("+err.Error()+")")
	}
	return services, pods, strings.Join(miss, " and ")
}

// serviceRangesWait bounds ServiceRanges.
const serviceRangesWait = time.Second
