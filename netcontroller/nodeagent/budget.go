package nodeagent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// target is the budget the node's migration0 is to be shaped to.
type target struct {
	// rate is bytes a second each direction; 0: no budget, nothing shaped.
	rate int64
	// override is the selector of the budget's nodes entry that gave it, "" for the budget's own.
	override string
}

// nodeBudget reads the node's budget from r (the agent's cache of the migration-policy Setting
// and its own Node): the policy's budget for the Node's labels. No Setting or no budget: none. A
// policy that does not parse keeps what decoded (settings.ParseMigrationPolicy): a budget whose
// bandwidth does not decode is none.
func nodeBudget(ctx context.Context, r client.Reader, node string) (target, error) {
	if r == nil {
		return target{}, nil
	}
	s := &v1beta1.Setting{}
	if err := r.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return target{}, nil
		}
		return target{}, fmt.Errorf("reading the migration-policy setting: %w", err)
	}
	p, _ := settings.ParseMigrationPolicy(settings.EffectiveValue(s), field.NewPath("value"))
	if p == nil || p.Budget == nil {
		return target{}, nil
	}
	n := &corev1.Node{}
	if err := r.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return target{}, fmt.Errorf("reading node %s (its labels choose its budget): %w", node, err)
	}
	nb := p.Budget.For(n.Labels)
	t := target{rate: nb.Bandwidth}
	if nb.Override >= 0 {
		t.override = p.Budget.Nodes[nb.Override].SelectorString()
	}
	return t, nil
}
