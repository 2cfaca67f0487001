package guard

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
)

// ConfigMapName is the policies' parameter object (paramRef in manifests/guard/policy.yaml), in
// migranet's own namespace.
const ConfigMapName = "migranet-migration-networks"

// Keys of the parameter ConfigMap.
const (
	KeyNamespace = "namespace"
	KeyNames     = "names"
)

// Params writes the policies' parameter. Reads go to Reader (the API server, not a cache: the
// manager watches no ConfigMaps), writes to Client.
type Params struct {
	Client    client.Client
	Reader    client.Reader
	Namespace string // migranet's namespace, where the ConfigMap lives
	// NADNamespace is KubeVirt's namespace, where the migration NADs live.
	NADNamespace string
}

// Data is the parameter's content for names: sorted, without duplicates or empty names.
func Data(nadNamespace string, names []string) map[string]string {
	var keep []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			keep = append(keep, n)
		}
	}
	slices.Sort(keep)
	return map[string]string{KeyNamespace: nadNamespace, KeyNames: strings.Join(slices.Compact(keep), " ")}
}

// Set makes the parameter list exactly names, creating the ConfigMap when missing and writing
// only on a change.
func (p *Params) Set(ctx context.Context, names ...string) error {
	want := Data(p.NADNamespace, names)
	have := &corev1.ConfigMap{}
	err := p.Reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ConfigMapName}, have)
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: ConfigMapName,
				Labels: map[string]string{settings.LabelManagedBy: settings.ManagedBy}},
			Data: want,
		}
		if err := p.Client.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating the guard's parameter %s/%s: %w", p.Namespace, ConfigMapName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the guard's parameter %s/%s: %w", p.Namespace, ConfigMapName, err)
	}
	if have.Data[KeyNamespace] == want[KeyNamespace] && have.Data[KeyNames] == want[KeyNames] {
		return nil
	}
	patch := client.MergeFrom(have.DeepCopy())
	if have.Data == nil {
		have.Data = map[string]string{}
	}
	have.Data[KeyNamespace], have.Data[KeyNames] = want[KeyNamespace], want[KeyNames]
	if err := p.Client.Patch(ctx, have, patch); err != nil {
		return fmt.Errorf("updating the guard's parameter %s/%s: %w", p.Namespace, ConfigMapName, err)
	}
	return nil
}
