package controller

import (
	"context"
	"fmt"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/decider"
	"github.com/migranet/migranet/settings/v1beta1"
)

// observe reads, from the cache, what the source's Decide looks at: the owner object (absent:
// nil), the KubeVirt CR and the NADs of KubeVirt's namespace.
func (r *Controller) observe(ctx context.Context, s *v1beta1.Setting, eff settings.Effective) (decider.Observed, error) {
	in := decider.Observed{Own: eff, OwnValue: strings.TrimSpace(settings.EffectiveValue(s)), WrittenHash: s.Status.WrittenHash, Namespace: r.KubeVirtNamespace}
	if owner, key := r.source().Owner(); owner != nil {
		switch err := r.Client.Get(ctx, key, owner); {
		case err == nil:
			u, ok := owner.(*unstructured.Unstructured)
			if !ok {
				return in, fmt.Errorf("reading %s: got %T, want an unstructured object", key, owner)
			}
			in.Owner = u
		case !apierrors.IsNotFound(err):
			return in, fmt.Errorf("reading %s %s: %w", owner.GetObjectKind().GroupVersionKind().Kind, key, err)
		}
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

// rulesOn runs migranet's rules on a mirrored network as admission would on a value: what the
// source accepted that cannot work here (a range over the nodes' addresses or the cluster's own
// networks, too few addresses, a node without the cluster network). It reports, never undoes.
func (r *Controller) rulesOn(ctx context.Context, src *v1beta1.NetworkSource) string {
	cl, err := r.cluster(ctx)
	if err != nil {
		return ""
	}
	errs := settings.EffectiveNetwork(&v1beta1.Setting{Status: v1beta1.SettingStatus{Source: src}}).Validate(cl)
	if len(errs) == 0 {
		return ""
	}
	return settings.ErrorsMessage(errs)
}
