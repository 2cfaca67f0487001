package controller

import (
	"context"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/settings/v1beta1"
)

// HCO is the settings controller's part in HCO mode (settings/hcomode): the KubeVirt CR is
// HCO's operand, so the network is written into the HyperConverged CR's one field instead, and a
// network chosen there by someone else is mirrored, not reverted.
type HCO struct {
	// Key is the HyperConverged CR; its namespace is the KubeVirt namespace.
	Key client.ObjectKey
	// Field is the network field of the served API version.
	Field hcomode.Field
}

// reconcileHCO applies the setting in HCO mode: migranet's value through the HyperConverged CR
// when it decides (hcomode.Decide), else the mirror of the network HCO put in force.
func (r *Controller) reconcileHCO(ctx context.Context, s *v1beta1.Setting, eff settings.Effective) (reconcile.Result, error) {
	in, err := r.readHCO(ctx, s, eff)
	r.Metrics.Step(ControllerName, StepHyperConverged, err)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := hcomode.Decide(in)
	if !d.Write {
		return reconcile.Result{}, r.mirrorHCO(ctx, s, d)
	}
	serr := r.apply(ctx, s, eff, d.Keep...)
	if err := r.writeStatus(ctx, s, eff, serr, &d); err != nil {
		return reconcile.Result{}, err
	}
	if serr != nil {
		return reconcile.Result{}, serr
	}
	return reconcile.Result{}, nil
}

// readHCO gathers Decide's input from the cache.
func (r *Controller) readHCO(ctx context.Context, s *v1beta1.Setting, eff settings.Effective) (hcomode.Input, error) {
	in := hcomode.Input{Own: eff, WrittenHash: s.Status.WrittenHash, Key: r.HCO.Key, Field: r.HCO.Field}
	hc := r.HCO.Field.New()
	switch err := r.Client.Get(ctx, r.HCO.Key, hc); {
	case err == nil:
		in.HyperConverged = hc
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("reading HyperConverged %s: %w", r.HCO.Key, err)
	}
	kv, err := clusterread.KubeVirtCR(ctx, r.Client, r.KubeVirtNamespace)
	if err != nil {
		return in, err
	}
	in.KubeVirt = kv
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := r.Client.List(ctx, nads, client.InNamespace(r.KubeVirtNamespace)); err != nil {
		return in, fmt.Errorf("listing NetworkAttachmentDefinitions in %s: %w", r.KubeVirtNamespace, err)
	}
	in.NADs = nads.Items
	return in, nil
}

// pointHyperConverged sets (or, for "", removes) the HyperConverged CR's network field, only when
// it differs, with a JSON merge patch of that one field: HCO copies it into the KubeVirt CR
// (hcLiveMigrationToKv), and every other field of both CRs stays HCO's and its users'.
func (r *Controller) pointHyperConverged(ctx context.Context, network string) *stepError {
	hc := r.HCO.Field.New()
	if err := r.Client.Get(ctx, r.HCO.Key, hc); err != nil {
		return &stepError{hcomode.ReasonHyperConvergedNotFound, fmt.Errorf("reading HyperConverged %s: %w", r.HCO.Key, err)}
	}
	if r.HCO.Field.Get(hc) == network {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("pointing the HyperConverged CR at the migration network", "hyperconverged", klog.KObj(hc), "field", r.HCO.Field.String(), "network", network)
	if err := r.Client.Patch(ctx, hc, client.RawPatch(typesMergePatch, r.HCO.Field.Patch(network))); err != nil {
		return &stepError{ReasonHyperConvergedFailed, fmt.Errorf("patching HyperConverged %s %s=%q: %w", r.HCO.Key, r.HCO.Field, network, err)}
	}
	return nil
}

// mirrorHCO writes, while the HyperConverged CR decides, the mirror of the network in force: the
// range (for the pool cleanup), the guard on the NADs in use, and the status. It deletes the NADs
// migranet rendered that neither CR names any more.
func (r *Controller) mirrorHCO(ctx context.Context, s *v1beta1.Setting, d hcomode.Decision) error {
	if d.Network != nil {
		if err := RecordRange(ctx, r.Client, s, d.Network.Range); err != nil {
			return err
		}
	}
	if err := r.setGuard(ctx, d.Guard...); err != nil {
		return err
	}
	if err := r.deleteUnreferenced(ctx, d.Keep...); err != nil {
		return fmt.Errorf("deleting NetworkAttachmentDefinitions no longer referenced: %w", err)
	}
	if d.Network != nil && d.Configured.Reason == hcomode.ReasonMirrored {
		if cl, err := r.cluster(ctx); err == nil {
			src := &v1beta1.Setting{Status: v1beta1.SettingStatus{Source: d.Source}}
			if errs := settings.EffectiveNetwork(src).Validate(cl); len(errs) > 0 {
				d.Configured.Message += "; but migranet's rules find: " + settings.ErrorsMessage(errs)
			}
		}
	}
	return writeMirrorStatus(ctx, mirrorWrite{client: r.Client, recorder: r.Recorder, metrics: r.Metrics, name: ControllerName},
		s, d.Source, d.Network, d.Configured, "HCO: ", map[string]any{"writtenHash": s.Status.WrittenHash})
}
