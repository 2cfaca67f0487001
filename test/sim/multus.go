package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	nadutils "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/utils"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Multus is the Multus + bridge CNI + whereabouts simulator (see the package documentation).
type Multus struct {
	Client   client.Client
	Recorder record.EventRecorder

	mu sync.Mutex
	// held are the addresses this simulator handed out, by pod; the cache may lag behind them.
	held map[types.UID][]netip.Addr
}

// SetupWithManager registers the simulator with a manager.
func (r *Multus) SetupWithManager(mgr ctrl.Manager) error {
	r.held = map[types.UID][]netip.Addr{}
	wantsNetworks := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetAnnotations()[NetworksAnnotation]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).Named("sim-multus").
		For(&corev1.Pod{}, builder.WithPredicates(wantsNetworks)).
		Complete(r)
}

// Reconcile attaches a scheduled pod's extra networks once, as Multus does at sandbox creation.
func (r *Multus) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pod.DeletionTimestamp != nil {
		r.release(pod.UID)
		return reconcile.Result{}, nil
	}
	if pod.Spec.NodeName == "" || pod.Annotations[NetworkStatusAnnotation] != "" {
		return reconcile.Result{}, nil
	}
	statuses, err := r.attach(ctx, pod)
	if err != nil {
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox",
			"Failed to create pod sandbox: plugin type=\"multus\" name=\"multus-cni-network\" failed (add): %v", err)
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	raw, err := json.Marshal(statuses)
	if err != nil {
		return reconcile.Result{}, err
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Annotations[NetworkStatusAnnotation] = string(raw)
	return reconcile.Result{}, r.Client.Patch(ctx, pod, patch)
}

// attach resolves every requested network and allocates its address.
func (r *Multus) attach(ctx context.Context, pod *corev1.Pod) ([]nadv1.NetworkStatus, error) {
	elems, err := nadutils.ParseNetworkAnnotation(pod.Annotations[NetworksAnnotation], pod.Namespace)
	if err != nil {
		return nil, err
	}
	statuses := []nadv1.NetworkStatus{{Name: "kwok-pod-network", Interface: "eth0", Default: true}}
	var taken []netip.Addr
	for i, e := range elems {
		nad := &nadv1.NetworkAttachmentDefinition{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, nad); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("error adding container to network %q: cannot find a network-attachment-definition (%s) in namespace (%s)", e.Name, e.Name, e.Namespace)
			}
			return nil, err
		}
		ip, err := r.allocate(ctx, pod, nad, taken)
		if err != nil {
			r.release(pod.UID)
			return nil, fmt.Errorf("error adding container to network %q: %v", e.Name, err)
		}
		taken = append(taken, ip)
		iface := e.InterfaceRequest
		if iface == "" {
			iface = fmt.Sprintf("net%d", i+1)
		}
		statuses = append(statuses, nadv1.NetworkStatus{
			Name: e.Namespace + "/" + e.Name, Interface: iface, IPs: []string{ip.String()}, Mac: macFor(ip),
		})
	}
	return statuses, nil
}

// whereaboutsIPAM is the part of a NAD's CNI config the simulator reads.
type whereaboutsIPAM struct {
	IPAM struct {
		Type    string   `json:"type"`
		Range   string   `json:"range"`
		Exclude []string `json:"exclude"`
	} `json:"ipam"`
}

// allocate hands out the lowest free address of the NAD's whereabouts range, skipping the
// network and last address, excluded prefixes, and addresses held by other pods.
func (r *Multus) allocate(ctx context.Context, pod *corev1.Pod, nad *nadv1.NetworkAttachmentDefinition, also []netip.Addr) (netip.Addr, error) {
	var cfg whereaboutsIPAM
	if err := json.Unmarshal([]byte(nad.Spec.Config), &cfg); err != nil {
		return netip.Addr{}, fmt.Errorf("invalid CNI config: %v", err)
	}
	if cfg.IPAM.Type != "whereabouts" {
		return netip.Addr{}, fmt.Errorf("ipam type %q is not simulated (only whereabouts)", cfg.IPAM.Type)
	}
	prefix, err := netip.ParsePrefix(cfg.IPAM.Range)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("whereabouts range: %v", err)
	}
	var excludes []netip.Prefix
	for _, e := range cfg.IPAM.Exclude {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("whereabouts exclude %q: %v", e, err)
		}
		excludes = append(excludes, p)
	}
	used, err := r.inUse(ctx)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range also {
		used[a] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ips := range r.held {
		for _, a := range ips {
			used[a] = true
		}
	}
	prefix = prefix.Masked()
	for a := prefix.Addr().Next(); a.IsValid() && prefix.Contains(a); a = a.Next() {
		if !prefix.Contains(a.Next()) { // the last address (IPv4 broadcast) is never handed out
			break
		}
		if used[a] || excluded(a, excludes) {
			continue
		}
		r.held[pod.UID] = append(r.held[pod.UID], a)
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("whereabouts: no free address left in range %s", prefix)
}

// inUse collects the addresses recorded in every pod's network-status annotation.
func (r *Multus) inUse(ctx context.Context) (map[netip.Addr]bool, error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods); err != nil {
		return nil, err
	}
	used := map[netip.Addr]bool{}
	for i := range pods.Items {
		statuses, err := nadutils.GetNetworkStatus(&pods.Items[i])
		if err != nil {
			continue
		}
		for _, st := range statuses {
			for _, ip := range st.IPs {
				if a, err := netip.ParseAddr(ip); err == nil {
					used[a] = true
				}
			}
		}
	}
	return used, nil
}

func (r *Multus) release(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, uid)
}

func excluded(a netip.Addr, excludes []netip.Prefix) bool {
	for _, p := range excludes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// macFor derives a locally administered MAC address from the IP, as stable as a real bridge port's.
func macFor(ip netip.Addr) string {
	b := ip.As16()
	return fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", b[12], b[13], b[14], b[15])
}
