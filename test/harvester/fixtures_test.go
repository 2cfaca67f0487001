package harvester

import (
	"context"
	"crypto/sha1" //nolint:gosec // Harvester's controller names the value's hash so; not used for security
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/sim"
)

// The names Harvester v1.8.2 uses, as docs/harvester.md cites them (test/sim holds them for the
// simulator of Harvester's controller).
const (
	settingName = v1beta1.MigrationNetwork
	// Annotations Harvester's vm-migration-network controller keeps on the Setting
	// (pkg/controller/master/kubevirt/vm_migration_network.go, setConfiguredCondition).
	hashAnnotation = sim.HarvesterHashAnnotation
	nadAnnotation  = sim.HarvesterNADAnnotation
	// Annotations the network controller keeps on a ClusterNetwork (manager/vlanconfig,
	// ensureClusterNetwork) and on a VlanConfig (its mutator), and the VlanConfig's label.
	uplinkMTUAnnotation    = sim.UplinkMTUAnnotation
	mtuSourceAnnotation    = sim.HarvesterNetworkGroup + "/mtu-source-vc"
	matchedNodesAnnotation = sim.HarvesterNetworkGroup + "/matched-nodes"
	clusterNetworkLabel    = sim.ClusterNetworkNameLabel
)

var (
	settingsGVR       = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
	clusterNetworkGVR = schema.GroupVersionResource{Group: "network.harvesterhci.io", Version: "v1beta1", Resource: "clusternetworks"}
	vlanConfigGVR     = schema.GroupVersionResource{Group: "network.harvesterhci.io", Version: "v1beta1", Resource: "vlanconfigs"}
)

func object(gvr schema.GroupVersionResource, kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
	}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// causes are the fields an Invalid answer names.
func causes(err error) []string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range st.Status().Details.Causes {
		out = append(out, c.Field)
	}
	return out
}

var _ = Describe("Harvester's CRDs from test/harvester/crds", func() {
	It("are Harvester's shapes: a cluster-scoped Setting with value at the top and no status subresource, the uplink MTU in a VlanConfig", func(ctx context.Context) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "settings.harvesterhci.io"}, crd)).To(Succeed())
		Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.ClusterScoped))
		Expect(crd.Spec.Versions).To(HaveLen(1))
		v := crd.Spec.Versions[0]
		Expect(v.Name).To(Equal("v1beta1"))
		Expect(v.Storage).To(BeTrue())
		// Harvester's controller writes value, annotations and status in one Update.
		Expect(v.Subresources == nil || v.Subresources.Status == nil).To(BeTrue(), "Setting has a status subresource")
		Expect(v.Schema.OpenAPIV3Schema.Properties).To(HaveKey("value"))
		Expect(v.Schema.OpenAPIV3Schema.Properties).To(HaveKey("default"))
		Expect(v.Schema.OpenAPIV3Schema.Properties["status"].Properties).To(HaveKey("conditions"))

		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "vlanconfigs.network.harvesterhci.io"}, crd)).To(Succeed())
		uplink := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["uplink"]
		Expect(uplink.Properties["linkAttributes"].Properties).To(HaveKey("mtu"))
		for _, name := range []string{"clusternetworks.network.harvesterhci.io", "vlanstatuses.network.harvesterhci.io"} {
			Expect(f.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed(), name)
		}
	})

	It("store the vm-migration-network Setting as Harvester's controller leaves it: value, hash and NAD annotations, configured condition", func(ctx context.Context) {
		value := `{"clusterNetwork":"migration","vlan":100,"range":"10.52.0.0/24","exclude":["10.52.0.0/28"]}`
		settings := dyn.Resource(settingsGVR)
		// Harvester registers the setting with an empty default (pkg/settings/settings.go) ...
		created, err := settings.Create(ctx, object(settingsGVR, "Setting", settingName, map[string]any{"default": ""}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = settings.Delete(ctx, settingName, metav1.DeleteOptions{})
		})
		// ... the admin sets the value ...
		created.Object["value"] = value
		updated, err := settings.Update(ctx, created, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// ... and the controller records the NAD, the value's hash and the condition in one Update.
		updated.SetAnnotations(map[string]string{
			hashAnnotation: sha1Hex(value),
			nadAnnotation:  "harvester-system/vm-migration-network-x7k2p",
		})
		now := time.Now().UTC().Format(time.RFC3339)
		updated.Object["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": "configured", "status": "True", "reason": "", "message": "", "lastUpdateTime": now,
		}}}
		_, err = settings.Update(ctx, updated, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		got, err := settings.Get(ctx, settingName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Object["value"]).To(Equal(value))
		var decoded map[string]any
		Expect(json.Unmarshal([]byte(got.Object["value"].(string)), &decoded)).To(Succeed())
		Expect(decoded).To(HaveKeyWithValue("clusterNetwork", "migration"))
		Expect(got.GetAnnotations()).To(HaveKeyWithValue(hashAnnotation, sha1Hex(value)))
		Expect(got.GetAnnotations()).To(HaveKeyWithValue(nadAnnotation, "harvester-system/vm-migration-network-x7k2p"))
		conds, found, err := unstructured.NestedSlice(got.Object, "status", "conditions")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "status.conditions pruned: the CRD lost its status schema")
		Expect(conds).To(ConsistOf(HaveKeyWithValue("type", "configured")))
	})

	It("prune what Harvester's schema does not know rather than refuse it", func(ctx context.Context) {
		settings := dyn.Resource(settingsGVR)
		obj := object(settingsGVR, "Setting", "migranet-pruned", map[string]any{
			"value": "x",
			"spec":  map[string]any{"value": "y"},
		})
		got, err := settings.Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = settings.Delete(ctx, "migranet-pruned", metav1.DeleteOptions{})
		})
		Expect(got.Object).NotTo(HaveKey("spec"))
		Expect(got.Object).To(HaveKeyWithValue("value", "x"))
	})

	It("keep a ClusterNetwork's uplink MTU as the network controller records it from a VlanConfig", func(ctx context.Context) {
		vc := object(vlanConfigGVR, "VlanConfig", "vc-migration", map[string]any{
			"spec": map[string]any{
				"clusterNetwork": "migration",
				"uplink": map[string]any{
					"nics":           []any{"eth1", "eth2"},
					"linkAttributes": map[string]any{"mtu": int64(9000)},
					"bondOptions":    map[string]any{"mode": "active-backup"},
				},
			},
		})
		vc.SetLabels(map[string]string{clusterNetworkLabel: "migration"})
		vc.SetAnnotations(map[string]string{matchedNodesAnnotation: `["node-1","node-2"]`})
		_, err := dyn.Resource(vlanConfigGVR).Create(ctx, vc, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = dyn.Resource(vlanConfigGVR).Delete(ctx, "vc-migration", metav1.DeleteOptions{})
		})
		cn := object(clusterNetworkGVR, "ClusterNetwork", "migration", map[string]any{"status": map[string]any{}})
		cn.SetAnnotations(map[string]string{uplinkMTUAnnotation: "9000", mtuSourceAnnotation: "vc-migration"})
		_, err = dyn.Resource(clusterNetworkGVR).Create(ctx, cn, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = dyn.Resource(clusterNetworkGVR).Delete(ctx, "migration", metav1.DeleteOptions{})
		})

		got, err := dyn.Resource(vlanConfigGVR).Get(ctx, "vc-migration", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		mtu, found, err := unstructured.NestedInt64(got.Object, "spec", "uplink", "linkAttributes", "mtu")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue())
		Expect(mtu).To(Equal(int64(9000)))
		// The schema defaults what Harvester's types default.
		miimon, _, _ := unstructured.NestedInt64(got.Object, "spec", "uplink", "bondOptions", "miimon")
		Expect(miimon).To(Equal(int64(-1)))
		gotCN, err := dyn.Resource(clusterNetworkGVR).Get(ctx, "migration", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(gotCN.GetAnnotations()).To(HaveKeyWithValue(uplinkMTUAnnotation, "9000"))
	})

	DescribeTable("refuse what Harvester's schema forbids, naming the field",
		func(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, field string) {
			_, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
			if err == nil {
				_ = dyn.Resource(gvr).Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
			}
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			Expect(causes(err)).To(ContainElement(field))
		},
		Entry("a Setting whose value is a JSON object, not a string", settingsGVR,
			object(settingsGVR, "Setting", "bad-value", map[string]any{"value": map[string]any{"clusterNetwork": "mgmt"}}), "value"),
		Entry("a Setting whose customized is not a boolean", settingsGVR,
			object(settingsGVR, "Setting", "bad-customized", map[string]any{"value": "", "customized": "yes"}), "customized"),
		Entry("a Setting condition without a type", settingsGVR,
			object(settingsGVR, "Setting", "bad-condition", map[string]any{"status": map[string]any{
				"conditions": []any{map[string]any{"status": "True"}},
			}}), "status.conditions[0].type"),
		Entry("a VlanConfig without its cluster network", vlanConfigGVR,
			object(vlanConfigGVR, "VlanConfig", "bad-vc", map[string]any{"spec": map[string]any{"uplink": map[string]any{}}}),
			"spec.clusterNetwork"),
		Entry("a VlanConfig with a negative MTU", vlanConfigGVR,
			object(vlanConfigGVR, "VlanConfig", "bad-mtu", map[string]any{"spec": map[string]any{
				"clusterNetwork": "migration", "uplink": map[string]any{"linkAttributes": map[string]any{"mtu": int64(-1)}},
			}}), "spec.uplink.linkAttributes.mtu"),
		Entry("a VlanConfig with an unknown bond mode", vlanConfigGVR,
			object(vlanConfigGVR, "VlanConfig", "bad-bond", map[string]any{"spec": map[string]any{
				"clusterNetwork": "migration", "uplink": map[string]any{"bondOptions": map[string]any{"mode": "fastest"}},
			}}), "spec.uplink.bondOptions.mode"),
	)
})
