package settings

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/migranet/migranet/settings/v1beta1"
)

func TestEffectiveNetwork(t *testing.T) {
	valid := `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}`
	m, _ := ParseMigrationNetwork(valid, nil)
	tests := []struct {
		name      string
		s         *v1beta1.Setting
		nad       string
		errs      int
		disabled  bool
		fromValue bool
	}{
		{name: "nil setting", s: nil, disabled: true},
		{name: "empty", s: &v1beta1.Setting{}, disabled: true},
		{name: "value", s: &v1beta1.Setting{Value: valid}, nad: NADName(m.Hash())},
		{name: "default when value is blank", s: &v1beta1.Setting{Value: "  ", Default: valid}, nad: NADName(m.Hash())},
		{name: "invalid", s: &v1beta1.Setting{Value: `{"vlan":`}, errs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := EffectiveNetwork(tt.s)
			if e.NAD != tt.nad || len(e.Errs) != tt.errs || e.Disabled() != tt.disabled {
				t.Fatalf("got NAD %q, %d errors, disabled %v; want %q, %d, %v", e.NAD, len(e.Errs), e.Disabled(), tt.nad, tt.errs, tt.disabled)
			}
			if e.NAD != "" && (e.Hash != m.Hash() || e.Network == nil) {
				t.Errorf("hash %q network %v", e.Hash, e.Network)
			}
		})
	}
}

// TestKubeVirtCR decides zero and several KubeVirt CRs: none is nil, several is the oldest, then
// the first name, whatever the list order.
func TestKubeVirtCR(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	kv := func(name string, at metav1.Time) kubevirtv1.KubeVirt {
		return kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kubevirt", CreationTimestamp: at}}
	}
	tests := []struct {
		name  string
		items []kubevirtv1.KubeVirt
		want  string
	}{
		{name: "none", want: ""},
		{name: "one", items: []kubevirtv1.KubeVirt{kv("kubevirt", t0)}, want: "kubevirt"},
		{name: "older second", items: []kubevirtv1.KubeVirt{kv("a", t1), kv("z", t0)}, want: "z"},
		{name: "older first", items: []kubevirtv1.KubeVirt{kv("z", t0), kv("a", t1)}, want: "z"},
		{name: "same time: first name", items: []kubevirtv1.KubeVirt{kv("b", t0), kv("a", t0), kv("c", t0)}, want: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OldestKubeVirt(tt.items)
			if name := nameOf(got); name != tt.want {
				t.Fatalf("OldestKubeVirt = %q, want %q", name, tt.want)
			}
			scheme := runtime.NewScheme()
			if err := kubevirtv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(scheme)
			for i := range tt.items {
				b = b.WithObjects(&tt.items[i])
			}
			read, err := KubeVirtCR(context.Background(), b.Build(), "kubevirt")
			if err != nil || nameOf(read) != tt.want {
				t.Fatalf("KubeVirtCR = %q, %v; want %q", nameOf(read), err, tt.want)
			}
		})
	}
}

func nameOf(kv *kubevirtv1.KubeVirt) string {
	if kv == nil {
		return ""
	}
	return kv.Name
}

// TestValidateEffectiveAgreesWithAdmission: the settings controller's judgement of the value in
// force is the webhook's (ValidateSetting) restricted to the field that value comes from, on the
// same Cluster; the empty value is valid whatever the nodes.
// Catches: a second list of rules drifting from admission's; the errors of a default in force
// reported under value; the cluster ignored.
func TestValidateEffectiveAgreesWithAdmission(t *testing.T) {
	const bad = `{"clusterNetwork":"migration","vlan":4095,"range":"192.168.100.0/30","mtu":100}`
	const good = `{"clusterNetwork":"migration","range":"192.168.100.0/24"}`
	lacking := append(attached("n", "migration", 2), node("bare"))
	selector := &kubevirtv1.KubeVirt{Spec: kubevirtv1.KubeVirtSpec{Workloads: &kubevirtv1.ComponentConfig{
		NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: map[string]string{ClusterNetworkLabelPrefix + "migration": "true"}}}}}
	tests := []struct {
		name string
		s    *v1beta1.Setting
		cl   *Cluster
		path string // "" when valid
	}{
		{name: "empty", s: &v1beta1.Setting{}, cl: ClusterOf(lacking, nil, nil, nil)},
		{name: "bad value", s: &v1beta1.Setting{Value: bad}, cl: ClusterOf(attached("n", "migration", 3), nil, nil, nil), path: "value"},
		{name: "bad default in force", s: &v1beta1.Setting{Value: " ", Default: bad}, cl: nil, path: "default"},
		{name: "a node lacks the cluster network", s: &v1beta1.Setting{Value: good}, cl: ClusterOf(lacking, nil, nil, nil), path: "value"},
		{name: "the node lacking it is outside KubeVirt's placement", s: &v1beta1.Setting{Value: good}, cl: ClusterOf(lacking, selector, nil, nil)},
		{name: "without a cluster only the value is judged", s: &v1beta1.Setting{Value: good}, cl: nil},
		{name: "unparsable", s: &v1beta1.Setting{Value: `{"range":`}, cl: nil, path: "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Name = v1beta1.MigrationNetwork
			got := ValidateEffective(tt.s, tt.cl)
			if (len(got) > 0) != (tt.path != "") {
				t.Fatalf("errors:\n%s want some under %q", dumpErrs(got), tt.path)
			}
			admission, _ := ValidateSetting(tt.s, tt.cl)
			var want field.ErrorList
			for _, e := range admission {
				if topField(e.Field) == tt.path {
					want = append(want, e)
				}
			}
			if dumpErrs(got) != dumpErrs(want) {
				t.Errorf("controller:\n%sadmission, under %q:\n%s", dumpErrs(got), tt.path, dumpErrs(want))
			}
		})
	}
}
