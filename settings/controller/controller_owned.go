package controller

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// EnsureOwned creates each setting migranet owns when it is absent, with its default, retrying
// with backoff while the API server or the admission webhook is not yet reachable. An existing
// setting is left as it is: its value belongs to the admin.
func EnsureOwned(ctx context.Context, c client.Client) error {
	log := ctrl.LoggerFrom(ctx).WithName("settings")
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 30, Cap: 10 * time.Second}
	for _, name := range settings.OwnedSettings {
		def := settings.DefaultOf(name)
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			s := &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Default: def}
			err := c.Create(ctx, s)
			if err == nil || apierrors.IsAlreadyExists(err) {
				return true, nil
			}
			log.Info("creating owned setting failed, retrying", "setting", name, "error", err.Error())
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
