package controller

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/decider"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// carryOut runs the steps of decision d in order and stops at the first failure: the guard on
// every managed NAD, the value's and the decision's first (no moment leaves a migration NAD open
// to other pods and VMs); the ranges recorded before any NAD of them exists; the value's NAD
// rendered when it decides or is kept for a hand-back; the source's field pointed; the managed
// NADs nothing keeps deleted; the guard narrowed to what stays.
func (r *Controller) carryOut(ctx context.Context, s *v1beta1.Setting, eff settings.Effective, d decider.Decision) *stepError {
	render := (d.Own || d.RenderOwn) && eff.Network != nil
	keep := slices.Clone(d.Keep)
	if d.Own || render {
		keep = settings.AppendUnique(keep, eff.NAD)
	}
	managed, err := r.managedNADs(ctx)
	if err == nil {
		err = r.setGuard(ctx, settings.AppendUnique(managed, append(keep, d.Guard...)...)...)
	}
	r.Metrics.Step(ControllerName, StepGuard, err)
	if err != nil {
		return &stepError{ReasonGuardFailed, err}
	}
	if d.Network != nil {
		if err := r.recordRange(ctx, s, d.Network.Range); err != nil {
			return &stepError{ReasonGuardFailed, err}
		}
	}
	if render {
		want := settings.RenderNAD(eff, r.KubeVirtNamespace)
		err := r.recordRange(ctx, s, eff.Network.Range)
		if err == nil {
			err = r.ensureNAD(ctx, want)
		}
		r.Metrics.Step(ControllerName, StepNAD, err)
		if err != nil {
			return &stepError{ReasonNADFailed, fmt.Errorf("ensuring NetworkAttachmentDefinition %s/%s: %w", want.Namespace, want.Name, err)}
		}
	}
	if p := d.Point; p != nil {
		err := r.point(ctx, p)
		r.Metrics.Step(ControllerName, StepKubeVirt, err)
		if err != nil {
			reason := ReasonHyperConvergedFailed
			if _, isKubeVirt := p.Object.(*kubevirtv1.KubeVirt); isKubeVirt {
				reason = ReasonKubeVirtFailed
			}
			return &stepError{reason, err}
		}
	}
	err = r.deleteUnreferenced(ctx, keep...)
	r.Metrics.Step(ControllerName, StepCleanup, err)
	if err != nil {
		return &stepError{ReasonCleanupFailed, fmt.Errorf("deleting NetworkAttachmentDefinitions no longer referenced: %w", err)}
	}
	if err := r.setGuard(ctx, settings.AppendUnique(keep, d.Guard...)...); err != nil {
		return &stepError{ReasonGuardFailed, err}
	}
	return nil
}

// point sends p's one-field merge patch, with no resourceVersion precondition: atomic on the
// server, and every other field stays its owner's.
func (r *Controller) point(ctx context.Context, p *decider.Point) error {
	ctrl.LoggerFrom(ctx).Info("pointing "+p.Field+" at the migration network", "object", klog.KObj(p.Object), "network", p.Network)
	if err := r.Client.Patch(ctx, p.Object, client.RawPatch(types.MergePatchType, p.Patch)); err != nil {
		return fmt.Errorf("patching %s %s %s=%q: %w", p.Object.GetObjectKind().GroupVersionKind().Kind, klog.KObj(p.Object), p.Field, p.Network, err)
	}
	return nil
}

// recordRange records rng in s's status.ranges (RecordRange).
func (r *Controller) recordRange(ctx context.Context, s *v1beta1.Setting, rng netip.Prefix) error {
	return RecordRange(ctx, r.Client, s, rng)
}

// RecordRange adds rng to status.ranges (own field manager) unless it is recorded already: the
// network controller deletes empty whereabouts pools only of recorded ranges, so a range is
// recorded before any NAD of it exists (or, in Harvester mode, as soon as its NAD is seen in
// force), as the guard names a NAD first.
func RecordRange(ctx context.Context, c client.Client, s *v1beta1.Setting, rng netip.Prefix) error {
	ranges, changed := settings.RecordRange(s.Status.Ranges, rng)
	if !changed {
		return nil
	}
	if err := statuswrite.ApplyStatus(ctx, c, s, statuswrite.FieldManagerRanges, nil, map[string]any{"ranges": ranges}); err != nil {
		return fmt.Errorf("recording range %s in status.ranges: %w", rng.Masked(), err)
	}
	s.Status.Ranges = ranges
	return nil
}

// setGuard lists names (empty ones dropped) in the guard's parameter.
func (r *Controller) setGuard(ctx context.Context, names ...string) error {
	if r.Guard == nil {
		return nil
	}
	return r.Guard.Set(ctx, names...)
}

// managedNADs lists the names of the NADs migranet manages in KubeVirt's namespace.
func (r *Controller) managedNADs(ctx context.Context) ([]string, error) {
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := r.Client.List(ctx, nads, client.InNamespace(r.KubeVirtNamespace), client.MatchingLabels{settings.LabelManagedBy: settings.ManagedBy}); err != nil {
		return nil, fmt.Errorf("listing the NetworkAttachmentDefinitions migranet manages: %w", err)
	}
	names := make([]string, 0, len(nads.Items))
	for i := range nads.Items {
		names = append(names, nads.Items[i].Name)
	}
	return names, nil
}

// ensureNAD creates the rendered NAD, or puts back its config and metadata if edited by hand.
func (r *Controller) ensureNAD(ctx context.Context, want *nadv1.NetworkAttachmentDefinition) error {
	have := &nadv1.NetworkAttachmentDefinition{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	if apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Info("creating NetworkAttachmentDefinition", "nad", klog.KObj(want))
		return client.IgnoreAlreadyExists(r.Client.Create(ctx, want))
	}
	if err != nil {
		return err
	}
	if have.Spec.Config == want.Spec.Config && subset(want.Labels, have.Labels) && subset(want.Annotations, have.Annotations) {
		return nil
	}
	patch := client.MergeFrom(have.DeepCopy())
	have.Spec.Config = want.Spec.Config
	have.Labels = merge(have.Labels, want.Labels)
	have.Annotations = merge(have.Annotations, want.Annotations)
	return r.Client.Patch(ctx, have, patch)
}

// deleteUnreferenced deletes managed NADs not in keep; no CR points at them any more.
func (r *Controller) deleteUnreferenced(ctx context.Context, keep ...string) error {
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := r.Client.List(ctx, nads, client.InNamespace(r.KubeVirtNamespace), client.MatchingLabels{settings.LabelManagedBy: settings.ManagedBy}); err != nil {
		return err
	}
	var errs []error
	for i := range nads.Items {
		nad := &nads.Items[i]
		if slices.Contains(keep, nad.Name) || nad.DeletionTimestamp != nil {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("deleting unreferenced NetworkAttachmentDefinition", "nad", klog.KObj(nad))
		if err := r.Client.Delete(ctx, nad, client.Preconditions{UID: &nad.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func merge(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}
