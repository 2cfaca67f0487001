package integration

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/migranet/migranet/settings/v1beta1"
)

// healthy is "<status>/<reason>" of the Healthy condition and status.paths.
func healthy(ctx context.Context) (string, *v1beta1.PathsStatus) {
	s := setting(ctx)
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionHealthy)
	if c == nil {
		return "absent", s.Status.Paths
	}
	return string(c.Status) + "/" + c.Reason + ": " + c.Message, s.Status.Paths
}
