package netcontroller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// ObserveOnce makes the observation the Observer publishes, read through r instead of the
// informers: migranet preflight reads it from the API server, so that it judges networkReady on
// the same snapshot the admission webhook would build. A missing setting is observed as "no
// migration network", as the Observer does.
func ObserveOnce(ctx context.Context, r client.Reader, kubevirtNamespace string) (*health.Snapshot, error) {
	s := &v1beta1.Setting{}
	if err := r.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); apierrors.IsNotFound(err) {
		s = &v1beta1.Setting{ObjectMeta: settingKey()}
	} else if err != nil {
		return nil, err
	}
	snap, _, _, _, err := observeSetting(ctx, r, kubevirtNamespace, s, nil)
	return snap, err
}

// StoreOf returns a Store holding snap, for a one-off evaluation outside the manager.
func StoreOf(snap *health.Snapshot) *health.Store {
	s := &health.Store{}
	s.Publish(snap)
	return s
}
