package hcomode

import (
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

const (
	ns        = "openshift-cnv"
	ownValue  = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}`
	ownValue2 = `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`
	// The OpenShift docs' shape of a migration NAD, made by hand.
	theirConfig = `{"cniVersion":"0.3.1","type":"bridge","bridge":"mig-br","mtu":9000,"ipam":{"type":"whereabouts","range":"10.200.5.0/24"}}`
)

func own(t *testing.T, value string) settings.Effective {
	t.Helper()
	e := settings.ValueNetwork(&v1beta1.Setting{Value: value})
	if len(e.Errs) > 0 {
		t.Fatalf("value %s: %v", value, e.Errs)
	}
	return e
}

func hyperConverged(f Field, network string) *unstructured.Unstructured {
	u := f.New()
	u.SetNamespace(ns)
	u.SetName(Name)
	u.Object["spec"] = map[string]any{"liveMigrationConfig": map[string]any{"progressTimeout": int64(150)}}
	if network != "" {
		_ = unstructured.SetNestedField(u.Object, network, f.path...)
	}
	return u
}

func kubeVirt(network string) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubevirt-kubevirt-hyperconverged"}}
	if network != "" {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{Network: &network}
	}
	return kv
}

func nad(name, config string, managed bool) nadv1.NetworkAttachmentDefinition {
	n := nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
	if managed {
		n.Labels = map[string]string{settings.LabelManagedBy: settings.ManagedBy}
	}
	return n
}

func TestFieldPatchTouchesOneField(t *testing.T) {
	for _, tc := range []struct{ version, network, want string }{
		{V1beta1, "mig", `{"spec":{"liveMigrationConfig":{"network":"mig"}}}`},
		{V1beta1, "", `{"spec":{"liveMigrationConfig":{"network":null}}}`},
		{V1, "mig", `{"spec":{"virtualization":{"liveMigrationConfig":{"network":"mig"}}}}`},
	} {
		f, ok := FieldOf(tc.version)
		if !ok {
			t.Fatalf("FieldOf(%s) not ok", tc.version)
		}
		if got := string(f.Patch(tc.network)); got != tc.want {
			t.Errorf("%s Patch(%q) = %s, want %s", tc.version, tc.network, got, tc.want)
		}
	}
	if _, ok := FieldOf("v2"); ok {
		t.Error("FieldOf(v2) ok: an unknown version must not be written")
	}
}

func TestFieldGetReadsOnlyItsVersionsPath(t *testing.T) {
	v1b, _ := FieldOf(V1beta1)
	v1, _ := FieldOf(V1)
	u := hyperConverged(v1b, "a")
	// The near miss: the same name at the other version's path.
	_ = unstructured.SetNestedField(u.Object, "b", v1.path...)
	if got := v1b.Get(u); got != "a" {
		t.Errorf("v1beta1 Get = %q, want a", got)
	}
	if got := v1.Get(u); got != "b" {
		t.Errorf("v1 Get = %q, want b", got)
	}
	if got := v1.Get(nil); got != "" {
		t.Errorf("Get(nil) = %q", got)
	}
	u.Object["spec"] = "not an object"
	if got := v1b.Get(u); got != "" {
		t.Errorf("Get of a malformed spec = %q", got)
	}
}

func TestJudgeNetwork(t *testing.T) {
	fld := field.NewPath("spec", "liveMigrationConfig", "network")
	a := own(t, ownValue)
	nads := []nadv1.NetworkAttachmentDefinition{
		*settings.RenderNAD(a, ns),
		nad("their-mig", theirConfig, false),
		nad("no-ipam", `{"cniVersion":"0.3.1","type":"bridge","bridge":"mig-br"}`, false),
		nad("sriov", `{"cniVersion":"0.3.1","type":"sriov","ipam":{"type":"whereabouts","range":"10.9.0.0/24"}}`, false),
		nad("chained", `{"cniVersion":"0.3.1","plugins":[{"type":"bridge"},{"type":"tuning"}]}`, false),
		nad("tiny", `{"cniVersion":"0.3.1","type":"bridge","bridge":"mig-br","ipam":{"type":"whereabouts","range":"10.9.0.0/30"}}`, false),
		nad("docs-macvlan", `{"cniVersion":"0.3.1","type":"macvlan","mode":"bridge","master":"ens5","ipam":{"type":"whereabouts","range":"10.200.5.0/24"}}`, false),
		nad("passthru", `{"cniVersion":"0.3.1","type":"macvlan","mode":"passthru","master":"ens5","ipam":{"type":"whereabouts","range":"10.200.6.0/24"}}`, false),
	}
	// The near miss: a NAD of the same name in another namespace is not the one HCO resolves.
	other := nad("elsewhere", theirConfig, false)
	other.Namespace = "default"
	nads = append(nads, other)
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"network.harvesterhci.io/mig": "true", "network.harvesterhci.io/migration": "true"}}}
	}
	cl := settings.ClusterOf([]*corev1.Node{node("n1"), node("n2"), node("n3")}, nil, nil, nil)
	for _, tc := range []struct {
		name, network, err, warn string
	}{
		{"the pod network", "", "", ""},
		{"migranet's NAD", a.NAD, "", ""},
		{"a hand-made bridge NAD", "their-mig", "", ""},
		{"missing", "nope", "Not found", ""},
		{"a NAD of that name only in another namespace", "elsewhere", "Not found", ""},
		{"bridge without IPAM", "no-ipam", "cannot carry migrations", ""},
		{"too few addresses for three nodes", "tiny", "cannot carry migrations in this cluster", ""},
		{"the OpenShift docs' macvlan NAD", "docs-macvlan", "", ""},
		{"a passthru macvlan: not judged", "passthru", "", "not judged"},
		{"another CNI type: not judged", "sriov", "", "does not judge"},
		{"a plugin list: not judged", "chained", "", "plugin list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warns := JudgeNetwork(fld, tc.network, ns, nads, cl)
			got := errs.ToAggregate()
			switch {
			case tc.err == "" && got != nil:
				t.Errorf("errors %v", got)
			case tc.err != "" && (got == nil || !strings.Contains(got.Error(), tc.err)):
				t.Errorf("errors %v, want %q", got, tc.err)
			case tc.err != "" && errs[0].Field != fld.String():
				t.Errorf("error on %s, want %s", errs[0].Field, fld)
			}
			if w := strings.Join(warns, "|"); (tc.warn == "") != (w == "") || !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
		})
	}
}
