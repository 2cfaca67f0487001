package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync"
	"time"

	nadutils "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/utils"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/test/cluster"
)

// Annotations on a VirtualMachineInstanceMigration that script the stand-in for a scenario.
const (
	// HandlerModeAnnotation "PostCopy" makes the source switch the running migration to post-copy.
	// It is read from the migration, else from the VMI: a migration virt-api creates for `virtctl
	// migrate` carries no annotation, but a VirtualMachine's spec.template.metadata.annotations
	// reach its VMI (virt-controller copies them), so every migration of that VM runs post-copy.
	HandlerModeAnnotation = "handler.sim.migranet.io/mode"
	// HandlerHoldAnnotation "true" keeps the migration running (never completed, and, once the
	// target has the domain, never failed by its path) until removed or aborted; read, like
	// HandlerModeAnnotation, from the migration, else from the VMI.
	HandlerHoldAnnotation = "handler.sim.migranet.io/hold"
	// HandlerDirtyRateAnnotation is the rate at which the guest dirties its memory while it migrates,
	// a quantity per second ("16Mi"): each pre-copy round after the first sends what the one
	// before left dirty. Read like HandlerModeAnnotation; VirtHandlerStandIn.DirtyRate without it.
	HandlerDirtyRateAnnotation = "handler.sim.migranet.io/dirty-rate"
	// HandlerBandwidthAnnotation caps the migration's stream, a quantity per second ("128Mi"); "0"
	// lifts the cap. Read like HandlerModeAnnotation; VirtHandlerStandIn.StreamBandwidth without
	// it. KubeVirt's bandwidthPerMigration applies on top, as libvirt applies it.
	HandlerBandwidthAnnotation = "handler.sim.migranet.io/bandwidth"
)

// HandlerServiceAccount is virt-handler's service account: the stand-in writes only with tokens
// of it bound to the virt-handler pod of the node it acts for.
const HandlerServiceAccount = "kubevirt-handler"

// VirtHandlerStandIn plays, for every node, the part of KubeVirt's virt-handler that shows in the
// API (see the package documentation). Its writes are merge patches of VirtualMachineInstances,
// each made as the virt-handler of the node concerned.
type VirtHandlerStandIn struct {
	// Client reads VMIs, migrations and virt-handler pods (a cache is fine).
	Client client.Client
	// Clientset asks for virt-handler tokens (TokenRequest bound to a virt-handler pod).
	Clientset kubernetes.Interface
	// Config locates the API server; its credentials are never used for writes.
	Config *rest.Config
	// Namespace is KubeVirt's, where the virt-handler pods run.
	Namespace string
	// MigrationTime is how long a migration whose path is judged by the model runs between its
	// start and its completion (or, over a path that drops full-size frames, its abort); a
	// migration between two real migration0 links streams instead.
	MigrationTime time.Duration
	// StreamBandwidth caps each stream, in bytes per second (0: no cap); DirtyRate is how fast the
	// guests dirty their memory while they migrate, in bytes per second. Per migration:
	// HandlerBandwidthAnnotation, HandlerDirtyRateAnnotation.
	StreamBandwidth, DirtyRate int64
	// Links tells what each virt-handler pod's migration0 is on its node (the Multus simulator);
	// nil: every path works.
	Links LinkSource
	// Proxies, when set, carry every stream through the patched migration proxy pair (one lab
	// proxy per virt-handler sandbox); nil: plain TCP between the migration0 addresses.
	Proxies *MigrationProxies

	mu      sync.Mutex
	nodes   map[string]*nodeIdentity
	streams map[types.UID]*Stream // by migration UID
	ended   endedStreams
}

// LinkSource returns the link a pod's interface was attached with (Multus.Link).
type LinkSource interface {
	Link(pod types.UID, ifName string) (Link, bool)
}

// nodeIdentity is one node's virt-handler credentials.
type nodeIdentity struct {
	pod    types.UID
	issued time.Time
	client client.Client
}

// tokenTTL is the lifetime of a virt-handler token; it is renewed well before.
const tokenTTL = time.Hour

// SetupWithManager registers the stand-in with a manager.
func (h *VirtHandlerStandIn) SetupWithManager(mgr ctrl.Manager) error {
	h.nodes = map[string]*nodeIdentity{}
	h.streams = map[types.UID]*Stream{}
	toVMI := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		m, ok := o.(*kubevirtv1.VirtualMachineInstanceMigration)
		if !ok {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.VMIName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("sim-virt-handler").
		For(&kubevirtv1.VirtualMachineInstance{}).
		Watches(&kubevirtv1.VirtualMachineInstanceMigration{}, toVMI).
		Complete(h)
}

// Reconcile takes the VMI one step, as the virt-handler of the node whose turn it is.
func (h *VirtHandlerStandIn) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := h.Client.Get(ctx, req.NamespacedName, vmi); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := h.endLauncher(ctx, vmi); err != nil {
		return reconcile.Result{}, err
	}
	node, patch, after, err := h.step(ctx, vmi)
	if err != nil || patch == nil {
		return reconcile.Result{RequeueAfter: after}, err
	}
	err = h.patchAs(ctx, node, vmi, patch)
	if errors.Is(err, errStale) {
		// The cache has not caught up with the VMI yet: decide again on the newer version.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	return reconcile.Result{RequeueAfter: after}, err
}

// errStale means the VMI changed between the decision and the write.
var errStale = errors.New("VMI changed since it was read")

// step decides the next write: which node's virt-handler makes it and the merge patch; nil when
// there is nothing to do (after, when set, is when to look again).
func (h *VirtHandlerStandIn) step(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (string, map[string]any, time.Duration, error) {
	st := &vmi.Status
	switch {
	case vmi.IsFinal() || st.NodeName == "":
		h.dropStreams(ctx, vmi, "")
		return "", nil, 0, nil
	case vmi.DeletionTimestamp != nil:
		// The domain is shut down: the VMI ends.
		h.dropStreams(ctx, vmi, "")
		return st.NodeName, status(map[string]any{"phase": kubevirtv1.Succeeded}), 0, nil
	case st.Phase == kubevirtv1.Scheduled:
		return st.NodeName, startDomain(vmi), 0, nil
	case st.Phase != kubevirtv1.Running || st.MigrationState == nil:
		return "", nil, 0, nil
	}
	ms := st.MigrationState
	if keep := ms.MigrationUID; ms.Completed || ms.Failed {
		h.dropStreams(ctx, vmi, "") // ended: StopTargetListener, StopSourceListener
	} else {
		h.dropStreams(ctx, vmi, keep)
	}
	var vmim *kubevirtv1.VirtualMachineInstanceMigration
	if !ms.Completed && !ms.Failed {
		var err error
		if vmim, err = h.migration(ctx, vmi); err != nil {
			return "", nil, 0, err
		}
	}
	path, rep, after := PathVerdict{Network: "Pod"}, (*StreamReport)(nil), time.Duration(0)
	if ms.TargetNodeAddress != "" && ms.StartTimestamp != nil && !ms.Completed && !ms.Failed {
		sides, err := h.sides(ctx, ms.SourceNode, ms.TargetNode)
		if err != nil {
			return "", nil, 0, err
		}
		if s := h.stream(ms.MigrationUID); s != nil && Streamable(sides[0], sides[1]) {
			r := h.runStream(ctx, s, vmi, vmim, sides[0])
			path, rep, after = PathVerdict{Network: "Migration"}, &r, streamPoll
		} else if h.Links != nil {
			path = WirePath(ctx, sides[0], sides[1])
		} else {
			path = PathVerdict{Network: "Migration"}
		}
	}
	if ms.AbortRequested && ms.AbortStatus == "" {
		if s := h.stream(ms.MigrationUID); s != nil {
			s.Abort() // the stream closes before the source reports the abort
		}
	}
	if patch := sourceStep(vmi, vmim, path, rep, h.MigrationTime); patch != nil {
		return ms.SourceNode, patch, after, nil
	}
	target := ms.TargetNode
	if target == "" || vmi.Labels[kubevirtv1.MigrationTargetNodeNameLabel] != target {
		return "", nil, after, nil
	}
	patch, next, err := h.targetStep(ctx, vmi, vmim, path, rep)
	if patch == nil && (next == 0 || (after != 0 && after < next)) {
		next = after
	}
	return target, patch, next, err
}

// streamPoll is how often the stand-in looks at a running stream's report.
const streamPoll = 200 * time.Millisecond

// Streamable reports whether a migration between the two sides can move its bytes for real: both
// virt-handlers have a migration0 the real plugins made, and no simulated VLAN tag keeps them
// apart (those links are untagged on this kernel, so packets would cross where a tag would
// not). Anything else is judged by the model (MigrationPath).
func Streamable(src, dst Side) bool {
	s, d := src.Migration0, dst.Migration0
	return s != nil && d != nil && s.Sandbox != "" && d.Sandbox != "" && !(s.VLAN != d.VLAN && (s.TagSimulated || d.TagSimulated))
}

// runStream starts the migration's stream from the source once (the plan from the VMI, the
// scenario's annotations and the stand-in's defaults; the monitor's options from the VMI's
// migrationConfiguration), keeps its hold and post-copy in line with the scenario, and returns
// its report.
func (h *VirtHandlerStandIn) runStream(ctx context.Context, s *Stream, vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, src Side) StreamReport {
	ms := vmi.Status.MigrationState
	s.SetHold(scripted(vmi, vmim, HandlerHoldAnnotation) == "true")
	if ms.Mode == kubevirtv1.MigrationPostCopy {
		s.SetMode(kubevirtv1.MigrationPostCopy)
	}
	if !s.Report().Started {
		opts := OptionsFromVMIM(ms.VMIMConfigurationOptions)
		if ms.VMIMConfigurationOptions == nil {
			opts = h.clusterOptions(ctx)
		}
		memory := GuestMemory(vmi)
		plan := StreamPlan{Memory: memory.Value(),
			DirtyRate: h.rate(ctx, vmi, vmim, HandlerDirtyRateAnnotation, h.DirtyRate),
			Bandwidth: h.rate(ctx, vmi, vmim, HandlerBandwidthAnnotation, h.StreamBandwidth)}
		if opts.Bandwidth > 0 && (plan.Bandwidth == 0 || opts.Bandwidth < plan.Bandwidth) {
			plan.Bandwidth = opts.Bandwidth
		}
		target, err := netip.ParseAddr(ms.TargetNodeAddress)
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("stream starting", "migration", ms.MigrationUID, "from", src.Migration0.Addr, "to", target,
				"memory", plan.Memory, "dirtyRate", plan.DirtyRate, "bandwidth", plan.Bandwidth, "options", opts, "via", s.Path())
			h.startStream(s, src, target, plan, opts, MigrationDataGB(memory))
		}
	}
	r := s.Report()
	if (r.Done || r.Failure != "") && s.logEnd() {
		ctrl.LoggerFrom(ctx).Info("stream ended", "migration", ms.MigrationUID, "delivered", r.Delivered, "sent", r.Sent,
			"done", r.Done, "failure", r.Failure, "took", r.Took.String())
	}
	return r
}

// rate reads a quantity-per-second annotation of the scenario; without one (or with one that does
// not parse, which is logged naming the annotation) it is def.
func (h *VirtHandlerStandIn) rate(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, key string, def int64) int64 {
	v := scripted(vmi, vmim, key)
	if v == "" {
		return def
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() < 0 {
		ctrl.LoggerFrom(ctx).Error(err, "annotation ignored: it must be a non-negative quantity of bytes per second such as 64Mi", "annotation", key, "value", v)
		return def
	}
	return q.Value()
}

// clusterOptions are the monitor's options from the KubeVirt CR's spec.configuration.migrations
// (KubeVirt's defaults for what it leaves unset), for a VMI whose migrationState carries no
// migrationConfiguration (virt-controller copies it there; a simulated one may not).
func (h *VirtHandlerStandIn) clusterOptions(ctx context.Context) MigrationOptions {
	list := &kubevirtv1.KubeVirtList{}
	if err := h.Client.List(ctx, list, client.InNamespace(h.Namespace)); err != nil || len(list.Items) == 0 {
		return OptionsFrom(nil)
	}
	return OptionsFrom(list.Items[0].Spec.Configuration.MigrationConfiguration)
}

// sides are the two ends of a migration as the network sees them.
func (h *VirtHandlerStandIn) sides(ctx context.Context, source, target string) ([2]Side, error) {
	var sides [2]Side
	if h.Links == nil {
		return sides, nil
	}
	for i, node := range []string{source, target} {
		sides[i].Node = node
		pod, err := h.handlerPod(ctx, node)
		if err != nil {
			return sides, err
		}
		if pod == nil || migrationAddress(pod) == pod.Status.PodIP {
			continue // no migration0: the pod IP
		}
		link, ok := h.Links.Link(pod.UID, MigrationInterface)
		if !ok {
			continue
		}
		n := &corev1.Node{}
		if err := h.Client.Get(ctx, client.ObjectKey{Name: node}, n); client.IgnoreNotFound(err) != nil {
			return sides, err
		}
		sides[i].Migration0, sides[i].Uplink = &link, LinkUplink(n, link)
	}
	return sides, nil
}

// sourceStep is the source's next write, or nil, as KubeVirt v1.8.4's MigrationSourceController
// (pkg/virt-handler/migration-source.go) reports the domain's migration metadata in
// setMigrationProgressStatus: it starts the migration once the target listens (startTimestamp,
// mode PreCopy), switches it to post-copy when the scenario asks or the monitor switched it
// (post-copy or paused), ends it aborted (abortStatus Succeeded, failed, endTimestamp) once
// virt-controller requested the abort (handleMigrationAbort), and ends it failed (failed,
// endTimestamp, failureReason, from the metadata virt-launcher's setMigrationResult wrote): with a
// stream (rep), when it failed (the dial or a write, "Live migration failed ...", or the monitor's
// abort); without one, from the model of the path: at once when the source cannot reach the
// target's address (MigrateToURI3 fails: "Live migration failed %v", live-migration-source.go),
// after migrationTime when full-size frames are dropped (the progress monitor's abort, "Live
// migration stuck for %d seconds and has been aborted"). The target writes nothing of a failure
// (updateStatus returns early once migrations.MigrationFailed) until its finalCleanup.
func sourceStep(vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, path PathVerdict, rep *StreamReport, migrationTime time.Duration) map[string]any {
	ms := vmi.Status.MigrationState
	if ms.SourceNode != vmi.Status.NodeName || ms.TargetNodeAddress == "" || ms.Completed || ms.Failed {
		return nil
	}
	switch {
	case ms.AbortRequested && ms.AbortStatus == "":
		return migrationState(map[string]any{
			"abortStatus": kubevirtv1.MigrationAbortSucceeded, "failed": true,
			"endTimestamp": metav1.Now(), "failureReason": "Live migration aborted ", // sic, upstream's text
		})
	case ms.StartTimestamp == nil:
		return migrationState(map[string]any{"startTimestamp": metav1.Now(), "mode": kubevirtv1.MigrationPreCopy})
	case rep != nil && rep.Failure != "":
		return failMigration(rep.Failure)
	case rep != nil && rep.Mode != "" && rep.Mode != ms.Mode:
		// The monitor switched the migration (updateVMIMigrationMode).
		return migrationState(map[string]any{"mode": rep.Mode})
	case rep != nil:
	case (path.Broken || path.Stalls) && held(vmi, vmim):
		// A held migration streams on whatever its path does: the scenario ends it (an abort, or
		// the annotation's removal), as a migration of a guest too big to stall out would.
		if scripted(vmi, vmim, HandlerModeAnnotation) == string(kubevirtv1.MigrationPostCopy) && ms.Mode != kubevirtv1.MigrationPostCopy {
			return migrationState(map[string]any{"mode": kubevirtv1.MigrationPostCopy})
		}
		return nil
	case path.Broken:
		return failMigration(fmt.Sprintf("Live migration failed dial tcp %s: connect: %s", ms.TargetNodeAddress, path.Why))
	case path.Stalls && ms.TargetNodeDomainDetected && time.Since(ms.StartTimestamp.Time) >= migrationTime:
		return failMigration(fmt.Sprintf("Live migration stuck for %d seconds and has been aborted", stuckSeconds))
	case path.Stalls:
		return nil
	}
	if vmim != nil && ms.TargetNodeDomainDetected && scripted(vmi, vmim, HandlerModeAnnotation) == string(kubevirtv1.MigrationPostCopy) &&
		ms.Mode != kubevirtv1.MigrationPostCopy {
		// Post-copy starts once the domain runs on the target.
		return migrationState(map[string]any{"mode": kubevirtv1.MigrationPostCopy})
	}
	return nil
}

// stuckSeconds is KubeVirt's default progressTimeout (MigrationProgressTimeout, 150 s), which the
// failure reason of a stalled migration names when the model judges the path; the stand-in aborts
// after MigrationTime instead. A stream is aborted by the Monitor, with its own figure.
const stuckSeconds = 150

// failMigration is the source's report of a failed migration (setMigrationProgressStatus with
// migrationMetadata.Failed).
func failMigration(reason string) map[string]any {
	return migrationState(map[string]any{"failed": true, "endTimestamp": metav1.Now(), "failureReason": reason})
}

// held reports whether the scenario holds the migration running (HandlerHoldAnnotation).
func held(vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration) bool {
	return vmim != nil && vmi.Status.MigrationState.TargetNodeDomainDetected && scripted(vmi, vmim, HandlerHoldAnnotation) == "true"
}

// scripted returns the scenario's annotation key: the migration's, else the VMI's.
func scripted(vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, key string) string {
	if vmim == nil {
		return vmi.Annotations[key]
	}
	if v, ok := vmim.Annotations[key]; ok {
		return v
	}
	return vmi.Annotations[key]
}

// targetStep is the target's next write, or nil, in the order of KubeVirt v1.8.4's
// MigrationTargetController (pkg/virt-handler/migration-target.go): updateStatus advertises its
// address and ports (TargetNodeAddress, TargetDirectMigrationNodePorts) before the migration
// starts, then records the migrated domain detected (TargetNodeDomainDetected, once the source
// started and the domain reached the target: never over a path the source cannot reach it by)
// and ready (TargetNodeDomainReadyTimestamp; in post-copy the VM runs there while its memory
// follows); ackMigrationCompletion takes the VMI over once the migration ended (EndTimestamp,
// nodeName); finalizeMigration marks it completed (sync, migrationNeedsFinalization); finalCleanup
// drops the target label, and the CreateMigrationTarget annotation only after a success.
//
// With a stream (rep), the domain reached the target once the target accepted the memory stream,
// and the migration completes once every round crossed.
func (h *VirtHandlerStandIn) targetStep(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, path PathVerdict, rep *StreamReport) (map[string]any, time.Duration, error) {
	ms := vmi.Status.MigrationState
	switch {
	case ms.EndTimestamp != nil && (ms.Completed || ms.Failed):
		cleanup := map[string]any{"labels": map[string]any{kubevirtv1.MigrationTargetNodeNameLabel: nil}}
		if !ms.Failed {
			cleanup["annotations"] = map[string]any{kubevirtv1.CreateMigrationTarget: nil}
		}
		return map[string]any{"metadata": cleanup}, 0, nil
	case ms.Completed || ms.Failed:
		return nil, 0, nil
	case ms.TargetNodeAddress == "":
		p, err := h.prepareTarget(ctx, vmi, ms.TargetNode)
		if p == nil && err == nil {
			return nil, time.Second, nil // the target's virt-handler is not running yet
		}
		return p, 0, err
	case ms.StartTimestamp == nil || vmim == nil || (rep == nil && path.Broken):
		return nil, 0, nil
	case ms.EndTimestamp != nil:
		return migrationState(map[string]any{"completed": true}), 0, nil
	case rep != nil && !rep.Connected:
		return nil, 0, nil
	case !ms.TargetNodeDomainDetected:
		return migrationState(map[string]any{"targetNodeDomainDetected": true}), 0, nil
	case ms.Mode == kubevirtv1.MigrationPostCopy && ms.TargetNodeDomainReadyTimestamp == nil:
		// In post-copy the VM already runs on the target while its memory follows.
		return migrationState(map[string]any{"targetNodeDomainReadyTimestamp": metav1.Now()}), 0, nil
	case scripted(vmi, vmim, HandlerHoldAnnotation) == "true":
		return nil, 0, nil
	case rep != nil && rep.Done:
		return completeOnTarget(vmi), 0, nil
	case rep != nil:
		return nil, 0, nil
	}
	if left := h.MigrationTime - time.Since(ms.StartTimestamp.Time); left > 0 {
		return nil, left, nil
	}
	if path.Stalls {
		return nil, 0, nil // the source aborts it
	}
	return completeOnTarget(vmi), 0, nil
}

// endLauncher lets the virt-launcher pod whose domain has gone end, as its processes would: the
// source's once a migration completed, the target's once one failed. This is kubelet's report
// (kwok's, see cluster.ProcessesExitedAnnotation), not a virt-handler write.
func (h *VirtHandlerStandIn) endLauncher(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	ms := vmi.Status.MigrationState
	if ms == nil || ms.EndTimestamp == nil {
		return nil
	}
	name := ""
	switch {
	case ms.Failed:
		name = ms.TargetPod
	case ms.Completed:
		name = ms.SourcePod
	}
	if name == "" {
		return nil
	}
	pod := &corev1.Pod{}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: vmi.Namespace, Name: name}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.Annotations[cluster.ProcessesExitedAnnotation] == "true" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[cluster.ProcessesExitedAnnotation] = "true"
	return client.IgnoreNotFound(h.Client.Patch(ctx, pod, patch))
}

// startDomain is what virt-handler reports once the domain runs: phase Running, no SELinux, the
// migration method and transport, and the VMI live-migratable.
func startDomain(vmi *kubevirtv1.VirtualMachineInstance) map[string]any {
	conds := append([]kubevirtv1.VirtualMachineInstanceCondition(nil), vmi.Status.Conditions...)
	found := false
	for _, c := range conds {
		found = found || c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable
	}
	if !found {
		conds = append(conds, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
		})
	}
	return status(map[string]any{
		"phase": kubevirtv1.Running, "selinuxContext": "none", "conditions": conds,
		"migrationMethod": kubevirtv1.LiveMigration, "migrationTransport": kubevirtv1.MigrationTransportUnix,
	})
}

// completeOnTarget is the target's acknowledgement of a completed migration (v1.8.4's updateStatus
// recording the domain active, then ackMigrationCompletion, in one write as there): the domain
// runs there, and the VMI now belongs to the target node, its evacuation and launcher-image
// bookkeeping reset.
func completeOnTarget(vmi *kubevirtv1.VirtualMachineInstance) map[string]any {
	now := metav1.Now()
	ms := map[string]any{"endTimestamp": now}
	if vmi.Status.MigrationState.TargetNodeDomainReadyTimestamp == nil {
		ms["targetNodeDomainReadyTimestamp"] = now
	}
	target := vmi.Status.MigrationState.TargetNode
	return map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{kubevirtv1.NodeNameLabel: target, kubevirtv1.OutdatedLauncherImageLabel: nil},
			"annotations": map[string]any{kubevirtv1.EvictionSourceAnnotation: nil},
		},
		"status": map[string]any{
			"nodeName": target, "migrationState": ms, "migrationTransport": kubevirtv1.MigrationTransportUnix,
			"evacuationNodeName": nil, "launcherContainerImageVersion": nil,
		},
	}
}

// prepareTarget advertises where the target listens: the migration0 address of the node's
// virt-handler when the migration network is attached, else its pod IP, and the proxy's ports.
// On a migration0 the real plugins made, it listens there for real (ListenStream: a port per
// proxy key, bound to that address); otherwise the ports are made up.
func (h *VirtHandlerStandIn) prepareTarget(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, node string) (map[string]any, error) {
	pod, err := h.handlerPod(ctx, node)
	if err != nil || pod == nil {
		return nil, err
	}
	addr := migrationAddress(pod)
	if addr == "" {
		return nil, nil
	}
	uid := vmi.Status.MigrationState.MigrationUID
	if s := h.stream(uid); s != nil {
		return migrationState(map[string]any{"targetNodeAddress": addr, "targetDirectMigrationNodePorts": s.Ports()}), nil
	}
	if h.Links != nil && addr != pod.Status.PodIP {
		if link, ok := h.Links.Link(pod.UID, MigrationInterface); ok && link.Sandbox != "" {
			s, err := h.listenTarget(ctx, vmi, node, link)
			if err != nil {
				return nil, fmt.Errorf("the target's migration proxy on %s: %w", node, err)
			}
			s.vmi = vmi.UID
			h.mu.Lock()
			h.streams[uid] = s
			h.mu.Unlock()
			return migrationState(map[string]any{"targetNodeAddress": addr, "targetDirectMigrationNodePorts": s.Ports()}), nil
		}
	}
	base := 30000 + rand.IntN(20000)
	ports := map[string]int{strconv.Itoa(base): 0, strconv.Itoa(base + 1): 49152, strconv.Itoa(base + 2): 49153}
	return migrationState(map[string]any{"targetNodeAddress": addr, "targetDirectMigrationNodePorts": ports}), nil
}

// migrationAddress is the virt-handler pod's migration0 address, or its pod IP without one.
func migrationAddress(pod *corev1.Pod) string {
	if statuses, err := nadutils.GetNetworkStatus(pod); err == nil {
		for _, s := range statuses {
			if s.Interface == MigrationInterface && len(s.IPs) > 0 {
				if a, err := netip.ParseAddr(s.IPs[0]); err == nil {
					return a.String()
				}
			}
		}
	}
	return pod.Status.PodIP
}

// migration finds the VMIM the VMI's migration state names.
func (h *VirtHandlerStandIn) migration(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (*kubevirtv1.VirtualMachineInstanceMigration, error) {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := h.Client.List(ctx, list, client.InNamespace(vmi.Namespace)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].UID == vmi.Status.MigrationState.MigrationUID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// handlerPod is the running virt-handler pod on node, or nil.
func (h *VirtHandlerStandIn) handlerPod(ctx context.Context, node string) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := h.Client.List(ctx, pods, client.InNamespace(h.Namespace), client.MatchingLabels{VirtHandlerLabel: VirtHandlerName}); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return p, nil
		}
	}
	return nil, nil
}

// patchAs applies the merge patch to the VMI and writes it back with an update, as virt-handler
// writes (its RBAC allows update, not patch), as node's virt-handler. The object is read afresh
// and untyped (with a list: virt-handler's RBAC has no get), so fields this module's KubeVirt API
// does not know survive; a VMI changed since the decision is left for the next reconcile.
func (h *VirtHandlerStandIn) patchAs(ctx context.Context, node string, vmi *kubevirtv1.VirtualMachineInstance, patch map[string]any) error {
	c, err := h.identity(ctx, node)
	if err != nil {
		return err
	}
	// virt-handler may list and watch VMIs but not get them: read the one VMI with a list.
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kubevirtv1.SchemeGroupVersion.WithKind("VirtualMachineInstanceList"))
	err = c.List(ctx, list, client.InNamespace(vmi.Namespace), client.MatchingFields{"metadata.name": vmi.Name})
	if err == nil && (len(list.Items) != 1 || list.Items[0].GetResourceVersion() != vmi.ResourceVersion) {
		return errStale
	}
	if err == nil {
		u := &list.Items[0]
		// Round-trip through JSON so the patch's typed values (times, enums) become plain JSON.
		var raw []byte
		if raw, err = json.Marshal(patch); err == nil {
			var plain map[string]any
			if err = json.Unmarshal(raw, &plain); err == nil {
				mergePatch(u.Object, plain)
				err = c.Update(ctx, u)
			}
		}
	}
	if apierrors.IsUnauthorized(err) {
		h.forget(node)
	}
	if apierrors.IsConflict(err) {
		return errStale
	}
	if err != nil {
		return fmt.Errorf("virt-handler on %s writing VMI %s/%s: %w", node, vmi.Namespace, vmi.Name, err)
	}
	return nil
}

// mergePatch applies a JSON merge patch (RFC 7386) to doc in place: objects merge key by key, a
// null deletes the key, anything else replaces it.
func mergePatch(doc, patch map[string]any) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(doc, k)
		case map[string]any:
			dv, ok := doc[k].(map[string]any)
			if !ok {
				dv = map[string]any{}
				doc[k] = dv
			}
			mergePatch(dv, pv)
		default:
			doc[k] = v
		}
	}
}

// identity returns a client authenticated as the virt-handler of node, with a token bound to its
// pod (as `kubectl create token --bound-object-kind=Pod` issues it): the API server adds the
// node's name to the identity, which KubeVirt's node restriction checks.
func (h *VirtHandlerStandIn) identity(ctx context.Context, node string) (client.Client, error) {
	pod, err := h.handlerPod(ctx, node)
	if err != nil {
		return nil, err
	}
	if pod == nil {
		return nil, fmt.Errorf("no running virt-handler pod on node %s", node)
	}
	h.mu.Lock()
	id := h.nodes[node]
	h.mu.Unlock()
	if id != nil && id.pod == pod.UID && time.Since(id.issued) < tokenTTL/2 {
		return id.client, nil
	}
	ttl := int64(tokenTTL / time.Second)
	tr, err := h.Clientset.CoreV1().ServiceAccounts(h.Namespace).CreateToken(ctx, HandlerServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &ttl,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for the virt-handler on %s: %w", node, err)
	}
	cfg := rest.AnonymousClientConfig(h.Config)
	cfg.BearerToken = tr.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: h.Client.Scheme(), Mapper: h.Client.RESTMapper()})
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.nodes[node] = &nodeIdentity{pod: pod.UID, issued: time.Now(), client: c}
	h.mu.Unlock()
	return c, nil
}

func (h *VirtHandlerStandIn) forget(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.nodes, node)
}

func status(fields map[string]any) map[string]any {
	return map[string]any{"status": fields}
}

func migrationState(fields map[string]any) map[string]any {
	return status(map[string]any{"migrationState": fields})
}
