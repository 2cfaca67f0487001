package netcontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/guard"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Exclusive condition and of the event on each offender.
const (
	ReasonExclusive        = "OnlyVirtHandlers"
	ReasonForeignAttached  = "OtherWorkloadsAttached"
	ReasonNoMigrationNAD   = "NoMigrationNetwork"
	EventForeignAttachment = "MigrationNetworkAttached"
	// offendersListed caps the names in the condition's message.
	offendersListed = 5
)

// Offenders finds, on the leader, the pods and VMIs besides KubeVirt's virt-handlers that attach a
// migration NAD: objects from before the guard policies existed (which refuse new ones). It never
// deletes or evicts them: it counts them (gauge and the Setting's Exclusive condition) and puts a
// Warning event on each once. It scans at start, every Interval, and when the managed NADs change.
type Offenders struct {
	Client client.Client // cached: the setting, VMIs, NADs
	// Reader lists pods from the API server, metadata only and paged: the manager caches only
	// virt-handler pods.
	Reader            client.Reader
	Recorder          record.EventRecorder
	KubeVirtNamespace string
	Interval          time.Duration
	Metrics           *Metrics
	warned            map[types.UID]bool
}

// NeedLeaderElection makes it run on the leader only.
func (o *Offenders) NeedLeaderElection() bool { return true }

// Start scans until ctx ends; a failed scan is logged and retried at the next tick.
func (o *Offenders) Start(ctx context.Context) error {
	log := ctrl.FromContext(ctx).WithName("offenders")
	check := time.NewTicker(5 * time.Second)
	defer check.Stop()
	var last string
	next := time.Now()
	for {
		names, err := managedNADNames(ctx, o.Client, o.KubeVirtNamespace)
		if err == nil && (strings.Join(names, " ") != last || !time.Now().Before(next)) {
			if err = o.Scan(ctx, names); err == nil {
				last, next = strings.Join(names, " "), time.Now().Add(o.Interval)
			}
		}
		if err != nil {
			log.Error(err, "scanning for objects attached to the migration network")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-check.C:
		}
	}
}

// Scan counts the objects attached to the NADs names and reports them.
func (o *Offenders) Scan(ctx context.Context, names []string) error {
	rule := guard.Rule{NADNamespace: o.KubeVirtNamespace, Names: names}
	var pods, vmis []string
	if len(names) > 0 {
		var err error
		if pods, err = o.pods(ctx, rule); err != nil {
			return err
		}
		if vmis, err = o.vmis(ctx, rule); err != nil {
			return err
		}
	}
	o.Metrics.foreignAttachments("Pod", len(pods))
	o.Metrics.foreignAttachments("VirtualMachineInstance", len(vmis))
	s := &v1beta1.Setting{}
	if err := o.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		return client.IgnoreNotFound(err)
	}
	cond := ExclusiveCondition(o.KubeVirtNamespace, names, pods, vmis)
	return statuswrite.ApplyStatus(ctx, o.Client, s, statuswrite.FieldManagerGuard, []metav1.Condition{cond}, nil)
}

// ExclusiveCondition says whether only virt-handlers attach the migration NADs names; pods and
// vmis are the others, as namespace/name.
func ExclusiveCondition(nadNamespace string, names, pods, vmis []string) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ConditionExclusive, Status: metav1.ConditionTrue}
	switch {
	case len(names) == 0:
		c.Reason, c.Message = ReasonNoMigrationNAD, "no migration network: nothing to keep exclusive"
	case len(pods)+len(vmis) == 0:
		c.Reason, c.Message = ReasonExclusive, "only KubeVirt's virt-handlers attach "+nadNamespace+"/"+strings.Join(names, ", ")
	default:
		all := append(append([]string{}, pods...), vmis...)
		sort.Strings(all)
		shown := all
		if len(shown) > offendersListed {
			shown = shown[:offendersListed]
		}
		more := ""
		if n := len(all) - len(shown); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		c.Status, c.Reason = metav1.ConditionFalse, ReasonForeignAttached
		c.Message = fmt.Sprintf("%d pods and %d VMIs besides virt-handlers attach the migration network %s/%s: %s%s; "+
			"they keep working, but the migration network carries migrations only: remove it from their networks",
			len(pods), len(vmis), nadNamespace, strings.Join(names, ", "), strings.Join(shown, ", "), more)
	}
	return c
}

func (o *Offenders) pods(ctx context.Context, rule guard.Rule) ([]string, error) {
	var out []string
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	for {
		if err := o.Reader.List(ctx, list, client.Limit(500), client.Continue(list.Continue)); err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			if p.Namespace == o.KubeVirtNamespace && p.Labels[kubevirtv1.AppLabel] == "virt-handler" {
				continue
			}
			if rule.PodAttaches(p.Namespace, p.Annotations) {
				out = append(out, p.Namespace+"/"+p.Name)
				o.warn(p, "pod")
			}
		}
		if list.Continue == "" {
			return out, nil
		}
	}
}

func (o *Offenders) vmis(ctx context.Context, rule guard.Rule) ([]string, error) {
	list := &kubevirtv1.VirtualMachineInstanceList{}
	if err := o.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing VMIs: %w", err)
	}
	var out []string
	for i := range list.Items {
		v := &list.Items[i]
		if rule.NetworksAttach(v.Namespace, v.Spec.Networks) {
			out = append(out, v.Namespace+"/"+v.Name)
			o.warn(v, "VMI")
		}
	}
	return out, nil
}

// warn puts one Warning event on an offender, the first time it is found.
func (o *Offenders) warn(obj client.Object, what string) {
	if o.warned == nil {
		o.warned = map[types.UID]bool{}
	}
	if o.warned[obj.GetUID()] || o.Recorder == nil {
		return
	}
	o.warned[obj.GetUID()] = true
	o.Recorder.Eventf(obj, corev1.EventTypeWarning, EventForeignAttachment,
		"this %s attaches the migration network, which carries live migrations only: remove it from its networks (it keeps working; new ones are refused)", what)
}

// managedNADNames lists the migration NADs in KubeVirt's namespace, sorted: those migranet
// manages and, in Harvester mode, those Harvester's controller rendered (settings.HarvesterMigrationNAD).
func managedNADNames(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := c.List(ctx, nads, client.InNamespace(namespace)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	for i := range nads.Items {
		nad := &nads.Items[i]
		ours := nad.Labels[settings.LabelManagedBy] == settings.ManagedBy || settings.HarvesterMigrationNAD(nad)
		if ours && nad.DeletionTimestamp == nil {
			names = append(names, nad.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}
