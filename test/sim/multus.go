package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/test/nodenet"
)

// Multus is the Multus + bridge CNI + whereabouts simulator (see the package documentation).
//
// Allocations live where whereabouts keeps them: in IPPool objects in WhereaboutsNamespace, one
// per range (PoolName), read and written through the API server with resourceVersion-guarded
// JSON patches (whereaboutsAdd, whereaboutsDel). The simulator keeps in memory only what Multus
// caches of each ADD to run DEL from later (the pool and interface of each attachment, by
// sandbox), so a DEL still works after the NAD is gone.
//
// An address is released only by a CNI DEL, and the kubelet runs DEL only when it tears a
// sandbox down: here, when a pod is seen terminating gracefully (a deletionTimestamp with a
// grace period; kwok then deletes it) or finished (Succeeded, Failed). A pod that vanishes
// without that — force-deleted with grace period 0, bound to a lost node and removed by the pod
// garbage collector, deleted while the simulator was not watching — keeps its allocation in the
// IPPool for good, as in a real cluster (Harvester issue #9598).
type Multus struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Nodes, when set, are the nodes' real networks: each sandbox gets a network namespace and
	// every network is attached by the real plugins (realAttach), which then hold the addresses,
	// IPPools and reservations. Nil: the bridge plugin and whereabouts are simulated.
	Nodes *NodeNetworks

	mu sync.Mutex
	// sandboxes are the attached pods' sandboxes, by pod UID.
	sandboxes map[types.UID]*sandbox
}

// sandbox is what Multus remembers of a pod sandbox's ADD.
type sandbox struct {
	containerID string
	// netns is the sandbox's network namespace with real node networks ("" otherwise), and
	// host the namespace of its node.
	netns, host nodenet.NS
	// pause is the sandbox's process with real node networks (nil otherwise): in the sandbox's
	// namespace and a cgroup named after the pod, where the probe agent finds it.
	pause    *nodenet.Pause
	stopped  bool // torn down or gone: a pause process starting late stops at once
	pod      types.NamespacedName
	uid      types.UID
	attached []attachment
	// teardown: the kubelet tears this sandbox down, so DEL is due.
	teardown bool
}

// attachment is one network's allocation: the IPPool it lives in and the pod's interface, and
// the link the bridge plugin made.
type attachment struct {
	pool, networkName, ifName string
	link                      Link
	// network and config are the NAD and the config the real plugins were called with (DEL is
	// called with the same, as Multus does from its cache).
	network, config string
}

// SetupWithManager registers the simulator with a manager.
func (r *Multus) SetupWithManager(mgr ctrl.Manager) error {
	r.sandboxes = map[types.UID]*sandbox{}
	wantsNetworks := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetAnnotations()[NetworksAnnotation]
		return ok
	})
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(o client.Object, q queue) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	// Deletions are judged from the events themselves: by the time a request is processed, kwok
	// may have removed a gracefully deleted pod already.
	events := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { enqueue(e.Object, q) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			r.observe(e.ObjectNew, false)
			enqueue(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			r.observe(e.Object, true)
			enqueue(e.Object, q)
		},
	}
	return ctrl.NewControllerManagedBy(mgr).Named("sim-multus").
		Watches(&corev1.Pod{}, events, builder.WithPredicates(wantsNetworks)).
		Complete(r)
}

// observe marks a pod's sandbox for DEL when the pod terminates gracefully or has finished, and
// forgets the sandbox of a pod that is gone without that: its allocations leak.
func (r *Multus) observe(o client.Object, gone bool) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := r.sandboxes[pod.UID]
	switch {
	case sb == nil:
	case tornDown(pod):
		sb.teardown = true
	case gone && !sb.teardown:
		delete(r.sandboxes, pod.UID)
		if sb.netns != "" {
			// The sandbox is gone from the node with nothing told (no CNI DEL): its interfaces go
			// with its namespace, its addresses stay held.
			sb.stopped = true
			pause := sb.pause
			go func() {
				pause.Stop()
				_ = nodenet.DelNS(context.Background(), sb.netns)
			}()
		}
	}
}

// tornDown reports whether the kubelet tears the pod's sandbox down (and so runs CNI DEL): the
// pod is being deleted with a grace period, or its containers have all ended. A deletion with
// grace period 0 removes the object at once; nothing on the node is told.
func tornDown(pod *corev1.Pod) bool {
	graceful := pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds > 0
	return graceful || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Reconcile runs the DELs that are due, then attaches a scheduled pod's extra networks once, as
// Multus does at sandbox creation.
func (r *Multus) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A DEL that fails is retried (the kubelet retries a sandbox's teardown), but never holds up
	// another pod's sandbox.
	delErr := r.runDELs(ctx)
	res, err := r.reconcilePod(ctx, req)
	return res, errors.Join(err, delErr)
}

// reconcilePod attaches a scheduled pod's networks once.
func (r *Multus) reconcilePod(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pod.DeletionTimestamp != nil || tornDown(pod) || pod.Spec.NodeName == "" || pod.Annotations[NetworkStatusAnnotation] != "" {
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

// runDELs tears down every sandbox marked for it (cmdDel of each attachment, then its
// namespace); a failure leaves that sandbox for the next run and the others go on.
func (r *Multus) runDELs(ctx context.Context) error {
	r.mu.Lock()
	due := map[types.UID]*sandbox{}
	for uid, sb := range r.sandboxes {
		if sb.teardown {
			due[uid] = sb
		}
	}
	r.mu.Unlock()
	var errs []error
	for uid, sb := range due {
		errs = append(errs, r.teardown(ctx, uid, sb))
	}
	return errors.Join(errs...)
}

// teardown runs the sandbox's DELs and removes its namespace, then forgets it. On a node that is
// gone (its host namespace deleted with the Node) nothing runs DEL: the sandbox goes with the
// node and its addresses stay held, as on a lost node.
func (r *Multus) teardown(ctx context.Context, uid types.UID, sb *sandbox) error {
	r.mu.Lock()
	attached := append([]attachment(nil), sb.attached...)
	r.mu.Unlock()
	if sb.host == "" || nodenet.Exists(sb.host) {
		for _, a := range attached {
			if err := r.del(ctx, sb, a); err != nil {
				return fmt.Errorf("DEL of pod %s on %s: %w", sb.pod, a.network+a.pool, err)
			}
		}
	}
	if sb.netns != "" {
		r.mu.Lock()
		sb.stopped = true
		pause := sb.pause
		r.mu.Unlock()
		pause.Stop()
		if err := nodenet.DelNS(ctx, sb.netns); err != nil {
			return err
		}
	}
	r.mu.Lock()
	if r.sandboxes[uid] == sb {
		delete(r.sandboxes, uid)
	}
	r.mu.Unlock()
	return nil
}

// attach resolves every requested network and allocates its address. On a failure the networks
// attached so far are released again, as Multus deletes the delegates it added.
func (r *Multus) attach(ctx context.Context, pod *corev1.Pod) ([]nadv1.NetworkStatus, error) {
	elems, err := nadutils.ParseNetworkAnnotation(pod.Annotations[NetworksAnnotation], pod.Namespace)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	earlier := r.sandboxes[pod.UID]
	r.mu.Unlock()
	if earlier != nil {
		// An earlier attempt's sandbox: the kubelet removes it before it makes a new one.
		if err := r.teardown(ctx, pod.UID, earlier); err != nil {
			return nil, fmt.Errorf("removing the earlier sandbox: %w", err)
		}
	}
	sum := sha256.Sum256([]byte(pod.UID))
	sb := &sandbox{containerID: hex.EncodeToString(sum[:]), pod: client.ObjectKeyFromObject(pod), uid: pod.UID}
	if r.Nodes != nil {
		host, err := r.Nodes.Node(ctx, pod.Spec.NodeName)
		if err != nil {
			return nil, err
		}
		sb.host, sb.netns = host, nodenet.NS(r.Nodes.Fabric.Prefix+"-s"+sb.containerID[:10])
		if err := nodenet.AddNS(ctx, sb.netns); err != nil {
			return nil, err
		}
		// The sandbox's process, started beside the attachment and never in its way: without it
		// the probe agent reports NoNamespace for the node, which blocks nothing.
		go func() {
			p, err := r.Nodes.Pause(sb.netns, string(pod.UID))
			if err != nil {
				r.Recorder.Eventf(pod, corev1.EventTypeWarning, "PauseFailed", "the sandbox's process: %v", err)
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if sb.stopped {
				p.Stop()
				return
			}
			sb.pause = p
		}()
	}
	r.mu.Lock()
	r.sandboxes[pod.UID] = sb // registered first, so a deletion seen meanwhile marks it
	r.mu.Unlock()
	statuses := []nadv1.NetworkStatus{{Name: "kwok-pod-network", Interface: "eth0", Default: true}}
	for i, e := range elems {
		iface := e.InterfaceRequest
		if iface == "" {
			iface = fmt.Sprintf("net%d", i+1)
		}
		var a attachment
		if r.Nodes != nil {
			a, err = r.realAttach(ctx, sb, e.Namespace, e.Name, iface)
		} else {
			a, err = r.simAttach(ctx, pod, e.Namespace, e.Name, sb.containerID, iface)
		}
		if err == nil {
			r.mu.Lock()
			sb.attached = append(sb.attached, a)
			r.mu.Unlock()
			statuses = append(statuses, nadv1.NetworkStatus{
				Name: e.Namespace + "/" + e.Name, Interface: iface, IPs: []string{a.link.Addr.String()}, Mac: a.link.Mac,
			})
			continue
		}
		r.mu.Lock()
		sb.teardown = true
		r.mu.Unlock()
		if delErr := r.teardown(ctx, pod.UID, sb); delErr != nil {
			err = fmt.Errorf("%w; and while cleaning up: %v", err, delErr)
		}
		return nil, fmt.Errorf("error adding container to network %q: %w", e.Name, err)
	}
	return statuses, nil
}

// simAttach is allocate, remembered as an attachment.
func (r *Multus) simAttach(ctx context.Context, pod *corev1.Pod, namespace, name, containerID, ifName string) (attachment, error) {
	link, rng, err := r.allocate(ctx, pod, namespace, name, containerID, ifName)
	if err != nil {
		return attachment{}, err
	}
	link.Mac = macFor(link.Addr)
	return attachment{pool: PoolName(rng.NetworkName, rng.Prefix), networkName: rng.NetworkName, ifName: ifName, link: link}, nil
}

// del is a CNI DEL of one attachment: the real plugins' with real node networks, else the
// simulated whereabouts release.
func (r *Multus) del(ctx context.Context, sb *sandbox, a attachment) error {
	if sb.netns == "" {
		return whereaboutsDel(ctx, r.Client, a.pool, a.networkName, sb.containerID, a.ifName)
	}
	_, err := r.Nodes.Plugins.Run(ctx, realRequest("DEL", sb, a.network, a.ifName, a.config))
	return err
}

// allocate runs the NAD's bridge, macvlan or ipvlan plugin ADD, alone or first of a plugin list
// (ParseLinkConf: a VLAN outside 0–4094 fails it
// before any address is taken, as loadNetConf runs before IPAM) and asks whereabouts for an
// address of its range for the pod's interface.
func (r *Multus) allocate(ctx context.Context, pod *corev1.Pod, namespace, name, containerID, ifName string) (Link, WhereaboutsRange, error) {
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, nad); err != nil {
		if apierrors.IsNotFound(err) {
			return Link{}, WhereaboutsRange{}, fmt.Errorf("cannot find a network-attachment-definition (%s) in namespace (%s)", name, namespace)
		}
		return Link{}, WhereaboutsRange{}, err
	}
	lc, err := ParseLinkConf(nad.Spec.Config)
	if err != nil {
		return Link{}, WhereaboutsRange{}, err
	}
	rng, err := ParseWhereaboutsRange(nad.Spec.Config)
	if err != nil {
		return Link{}, WhereaboutsRange{}, err
	}
	ip, err := whereaboutsAdd(ctx, r.Client, rng, containerID, pod.Namespace+"/"+pod.Name, ifName)
	if err != nil {
		return Link{}, WhereaboutsRange{}, fmt.Errorf("error at storage engine: %w", err)
	}
	link := Link{NAD: namespace + "/" + name, BridgeConf: lc.BridgeConf, Master: lc.Master, Addr: ip, Prefix: rng.Prefix}
	return link, rng, nil
}

// Link returns the interface ifName the simulator attached to the pod with uid, while its sandbox
// lives: what the node's kernel knows of it (bridge, VLAN, MTU, address), which Multus' network
// status does not say (the bridge plugin reports no MTU).
func (r *Multus) Link(uid types.UID, ifName string) (Link, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := r.sandboxes[uid]
	if sb == nil {
		return Link{}, false
	}
	for _, a := range sb.attached {
		if a.ifName == ifName {
			return a.link, true
		}
	}
	return Link{}, false
}

// macFor derives a locally administered MAC address from the IP, as stable as a real bridge port's.
func macFor(ip netip.Addr) string {
	b := ip.As16()
	return fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", b[12], b[13], b[14], b[15])
}
