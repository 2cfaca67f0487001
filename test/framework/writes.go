package framework

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
)

// WritesBy lists, as "<verb> <event>", the audited requests of user that write resource (RBAC's
// name, e.g. "kubevirts") in group: how the mode suites count migranet's writes to objects
// another operator owns. The suite must run with env.AuditManagerRequests.
func (f *Framework) WritesBy(user, group, resource string) []string {
	GinkgoHelper()
	events, err := ReadAudit(f.AuditLog(), user)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range events {
		if e.ObjectRef == nil || e.ObjectRef.APIGroup != group || e.ObjectRef.Resource != resource {
			continue
		}
		switch e.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
			out = append(out, e.Verb+" "+e.String())
		}
	}
	return out
}

// SetUplinkMTU sets node's uplink MTU of the default cluster network (what a VlanConfig's MTU, or
// the NIC's, sets on the node), which the real node networks follow.
func (f *Framework) SetUplinkMTU(ctx context.Context, node string, mtu int) {
	GinkgoHelper()
	n := &corev1.Node{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations[cluster.UplinkMTUAnnotationPrefix+cluster.DefaultClusterNetwork] = fmt.Sprint(mtu)
	Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
}

// SetSetting sets the value of the Setting name (an admin's `kubectl edit setting`), which the
// settings webhook admits.
func (f *Framework) SetSetting(ctx context.Context, name, value string) {
	GinkgoHelper()
	Expect(f.PatchSetting(ctx, name, value)).To(Succeed())
}

// PatchSetting is SetSetting returning the error: the settings webhook's refusal, for a caller
// that waits until it admits (a network change waits for the migrations in flight).
func (f *Framework) PatchSetting(ctx context.Context, name, value string) error {
	return PatchSetting(ctx, f.Client, name, value)
}

// PatchSetting sets the value of the Setting name through c (for callers without a Framework:
// the benches).
func PatchSetting(ctx context.Context, c client.Client, name, value string) error {
	s := &v1beta1.Setting{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Value = value
	return c.Patch(ctx, s, patch)
}
