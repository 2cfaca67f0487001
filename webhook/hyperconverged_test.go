package webhook

import (
	"context"
	"encoding/json"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// TestHyperConvergedNeverRefusesMigranetsOwnWrite: a write of migranet's own (its value's NAD on
// the HyperConverged CR, patched right after the NAD is rendered) is never refused by migranet,
// whatever this replica's cache holds, and a NAD the cache lacks is looked for in the API server
// before it is called missing (issue 52, item 5). The near miss: a NAD missing everywhere is still
// NotFound.
// Catches: hcoNetwork judged on the cache alone (a replica behind the settings controller refuses
// its patch) or an exemption so wide that a missing NAD passes.
func TestHyperConvergedNeverRefusesMigranetsOwnWrite(t *testing.T) {
	const (
		valueA = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}`
		valueB = `{"clusterNetwork":"migration","vlan":100,"range":"10.52.0.0/24"}`
	)
	nadA := settings.RenderNAD(settings.ValueNetwork(&v1beta1.Setting{Value: valueA}), "kubevirt")
	nadB := settings.RenderNAD(settings.ValueNetwork(&v1beta1.Setting{Value: valueB}), "kubevirt")
	labelled := func(name string) corev1.Node {
		return *node(name, withLabels("kubernetes.io/hostname", name, settings.ClusterNetworkLabelPrefix+"migration", "true"))
	}
	nodes := []corev1.Node{labelled("node-0"), labelled("node-1"), labelled("node-2")}
	for _, tc := range []struct {
		name       string
		setting    string // migranet's value in this replica's cache
		network    string // the field the request sets
		cached     []nadv1.NetworkAttachmentDefinition
		api        []nadv1.NetworkAttachmentDefinition // nil: no API reader
		wantDenied bool
	}{
		{name: "own NAD, in the cache", setting: valueA, network: nadA.Name, cached: []nadv1.NetworkAttachmentDefinition{*nadA}},
		{name: "own NAD, not in the cache nor the API server yet", setting: valueA, network: nadA.Name},
		{name: "own new value's NAD, the cache behind on the setting and the NAD, the API server has it", setting: valueA, network: nadB.Name,
			cached: []nadv1.NetworkAttachmentDefinition{*nadA}, api: []nadv1.NetworkAttachmentDefinition{*nadA, *nadB}},
		{name: "someone else's NAD the cache lacks, in the API server", setting: "", network: nadB.Name, api: []nadv1.NetworkAttachmentDefinition{*nadB}},
		{name: "a NAD missing everywhere", setting: valueA, network: "typo", cached: []nadv1.NetworkAttachmentDefinition{*nadA},
			api: []nadv1.NetworkAttachmentDefinition{*nadA}, wantDenied: true},
		{name: "a NAD missing, no API reader", setting: "", network: nadB.Name, wantDenied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &memReader{kv: readyKubeVirt(), nodes: nodes, nads: tc.cached,
				settings: map[string]*v1beta1.Setting{v1beta1.MigrationNetwork: {ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}, Value: tc.setting}}}
			v := &HyperConvergedValidator{Reader: r, State: &migrationcheck.APIState{Reader: r, KubeVirtNamespace: "kubevirt"}, KubeVirtNamespace: "kubevirt"}
			if tc.api != nil {
				v.APIReader = &memReader{nads: tc.api}
			}
			resp := v.Handle(context.Background(), hcRequest(t, tc.network))
			if resp.Allowed == tc.wantDenied {
				t.Errorf("allowed %v (%v), want denied %v", resp.Allowed, resp.Result, tc.wantDenied)
			}
		})
	}
}

func hcRequest(t *testing.T, network string) admission.Request {
	t.Helper()
	f, _ := hcomode.FieldOf(hcomode.V1beta1)
	u := f.New()
	u.SetNamespace("kubevirt")
	u.SetName(hcomode.Name)
	u.Object["spec"] = map[string]any{"liveMigrationConfig": map[string]any{"network": network}}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: hcomode.Group, Version: hcomode.V1beta1, Kind: hcomode.Kind},
		Namespace: "kubevirt", Name: hcomode.Name, Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: raw},
	}}
}
