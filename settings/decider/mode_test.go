package decider

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/hcomode"
)

// notServing answers a Get of Harvester's Setting as an API server that does not serve it (the
// fake client answers NotFound for any kind).
type notServing struct{ client.Reader }

func (n notServing) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if obj.GetObjectKind().GroupVersionKind() == harvestermode.SettingGVK {
		return &meta.NoKindMatchError{GroupKind: harvestermode.SettingGVK.GroupKind(), SearchedVersions: []string{"v1beta1"}}
	}
	return n.Reader.Get(ctx, key, obj, opts...)
}

// mapper serves HCO's HyperConverged in versions and, with harvester, Harvester's Setting.
func mapper(harvester bool, versions ...string) meta.RESTMapper {
	var gvs []schema.GroupVersion
	for _, v := range versions {
		gvs = append(gvs, schema.GroupVersion{Group: hcomode.Group, Version: v})
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, v := range versions {
		m.Add(schema.GroupVersionKind{Group: hcomode.Group, Version: v, Kind: hcomode.Kind}, meta.RESTScopeNamespace)
	}
	if harvester {
		m.Add(harvestermode.SettingGVK, meta.RESTScopeRoot)
	}
	return m
}

func ownedKubeVirt(apiVersion, kind string, controller bool) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: hcoNS, Name: "kubevirt-kubevirt-hyperconverged"}}
	if kind != "" {
		kv.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: hcomode.Name, UID: "u", Controller: ptr.To(controller)}}
	}
	return kv
}

// TestDetect: one start-up choice over both flags. Each row sits next to its near miss: a
// HyperConverged owner that is not the controller, of another group or kind; Harvester's CRD
// served but its setting absent; a mode forced on without what it needs.
func TestDetect(t *testing.T) {
	harvesterSetting := harvestermode.NewSetting()
	harvesterSetting.SetName("vm-migration-network")
	hcoOwned := ownedKubeVirt("hco.kubevirt.io/v1beta1", hcomode.Kind, true)
	for _, tc := range []struct {
		name              string
		flags             Flags
		harvesterServed   bool
		harvesterExists   bool
		kv                *kubevirtv1.KubeVirt
		served            []string
		mode              Mode
		version, err, why string
	}{
		{name: "plain KubeVirt", flags: Flags{FlagAuto, FlagAuto}, kv: ownedKubeVirt("", "", false), mode: ModeOwn, why: "not a Harvester cluster"},
		{name: "Harvester", flags: Flags{FlagAuto, FlagAuto}, harvesterServed: true, harvesterExists: true, kv: hcoOwned, served: []string{hcomode.V1beta1}, mode: ModeHarvester, why: "exists"},
		{name: "Harvester's CRD but no setting", flags: Flags{FlagAuto, FlagAuto}, harvesterServed: true, kv: ownedKubeVirt("", "", false), mode: ModeOwn, why: "does not exist"},
		{name: "Harvester forced on before its setting exists", flags: Flags{FlagOn, FlagAuto}, harvesterServed: true, mode: ModeHarvester, why: "pod network is in force until Harvester creates it"},
		{name: "Harvester forced on without its CRD", flags: Flags{FlagOn, FlagAuto}, err: "does not serve settings.harvesterhci.io"},
		{name: "Harvester off on Harvester", flags: Flags{FlagOff, FlagAuto}, harvesterServed: true, harvesterExists: true, kv: ownedKubeVirt("", "", false), mode: ModeOwn},
		{name: "HCO, owned", flags: Flags{FlagAuto, FlagAuto}, kv: hcoOwned, served: []string{hcomode.V1beta1, hcomode.V1}, mode: ModeHCO, version: hcomode.V1beta1, why: "owned by HyperConverged"},
		{name: "HCO, only v1 served", flags: Flags{FlagAuto, FlagAuto}, kv: ownedKubeVirt("hco.kubevirt.io/v1", hcomode.Kind, true), served: []string{hcomode.V1}, mode: ModeHCO, version: hcomode.V1},
		{name: "owned, not as controller", flags: Flags{FlagAuto, FlagAuto}, kv: ownedKubeVirt("hco.kubevirt.io/v1beta1", hcomode.Kind, false), served: []string{hcomode.V1beta1}, mode: ModeOwn, why: "not managed by HCO"},
		{name: "owned by a HyperConverged of another group", flags: Flags{FlagAuto, FlagAuto}, kv: ownedKubeVirt("example.com/v1", hcomode.Kind, true), mode: ModeOwn},
		{name: "HCO off even when owned", flags: Flags{FlagAuto, FlagOff}, kv: hcoOwned, served: []string{hcomode.V1beta1}, mode: ModeOwn},
		{name: "HCO on without the CRD", flags: Flags{FlagAuto, FlagOn}, kv: ownedKubeVirt("", "", false), err: "does not serve hyperconvergeds.hco.kubevirt.io"},
		{name: "owned, but the CRD is gone", flags: Flags{FlagAuto, FlagAuto}, kv: hcoOwned, err: "does not serve"},
		{name: "HCO on, no KubeVirt CR yet", flags: Flags{FlagAuto, FlagOn}, served: []string{hcomode.V1beta1}, mode: ModeHCO, version: hcomode.V1beta1, why: "no KubeVirt CR owned"},
		{name: "unknown --harvester", flags: Flags{"yes", FlagAuto}, err: `--harvester="yes": want one of [auto on off]`},
		{name: "unknown --hco", flags: Flags{FlagAuto, "true"}, err: `--hco="true"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = kubevirtv1.AddToScheme(scheme)
			b := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper(tc.harvesterServed, tc.served...))
			if tc.kv != nil {
				b = b.WithObjects(tc.kv)
			}
			if tc.harvesterExists {
				b = b.WithObjects(harvesterSetting.DeepCopy())
			}
			c := b.Build()
			var r client.Reader = c
			if !tc.harvesterServed {
				r = notServing{c}
			}
			choice, err := Detect(context.Background(), tc.flags, r, c.RESTMapper(), hcoNS)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if choice.Decider.Mode() != tc.mode || !strings.Contains(choice.Why, tc.why) {
				t.Errorf("got %s (%s), want %s why~%q", choice.Decider.Mode(), choice.Why, tc.mode, tc.why)
			}
			if h, ok := choice.Decider.(HCO); ok && (h.Field.Version != tc.version || h.Key.Namespace != hcoNS || h.Key.Name != hcomode.Name) {
				t.Errorf("HCO %+v, want version %s, %s/%s", h, tc.version, hcoNS, hcomode.Name)
			}
		})
	}
}
