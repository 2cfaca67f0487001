package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/guard"
)

// GuardParams writes the policies' parameter. Reads go to Reader (the API server, not a cache: the
// manager watches no ConfigMaps), writes to Client.
type GuardParams struct {
	Client    client.Client
	Reader    client.Reader
	Namespace string // migranet's namespace, where the ConfigMap lives
	// NADNamespace is KubeVirt's namespace, where the migration NADs live.
	NADNamespace string
}

// Set makes the parameter list exactly names, creating the ConfigMap when missing and writing
// only on a change.
func (p *GuardParams) Set(ctx context.Context, names ...string) error {
	want := guard.Data(p.NADNamespace, names)
	have := &corev1.ConfigMap{}
	err := p.Reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: guard.ConfigMapName}, have)
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: guard.ConfigMapName,
				Labels: map[string]string{settings.LabelManagedBy: settings.ManagedBy}},
			Data: want,
		}
		if err := p.Client.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating the guard's parameter %s/%s: %w", p.Namespace, guard.ConfigMapName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the guard's parameter %s/%s: %w", p.Namespace, guard.ConfigMapName, err)
	}
	if have.Data[guard.KeyNamespace] == want[guard.KeyNamespace] && have.Data[guard.KeyNames] == want[guard.KeyNames] {
		return nil
	}
	patch := client.MergeFrom(have.DeepCopy())
	if have.Data == nil {
		have.Data = map[string]string{}
	}
	have.Data[guard.KeyNamespace], have.Data[guard.KeyNames] = want[guard.KeyNamespace], want[guard.KeyNames]
	if err := p.Client.Patch(ctx, have, patch); err != nil {
		return fmt.Errorf("updating the guard's parameter %s/%s: %w", p.Namespace, guard.ConfigMapName, err)
	}
	return nil
}
