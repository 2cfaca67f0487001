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
	"sigs.k8s.io/controller-runtime/pkg/client"

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

func TestDecide(t *testing.T) {
	f, _ := FieldOf(V1beta1)
	a, b, off := own(t, ownValue), own(t, ownValue2), own(t, "")
	rendered := settings.RenderNAD(a, ns)
	nads := []nadv1.NetworkAttachmentDefinition{*rendered, nad("their-mig", theirConfig, false), nad("not-a-migration-net", `{"type":"sriov"}`, false)}
	key := client.ObjectKey{Namespace: ns, Name: Name}
	cases := []struct {
		name        string
		in          Input
		write       bool
		written     string
		source      string // status.source.networkAttachmentDefinition; "-" for no source
		reason      string
		status      metav1.ConditionStatus
		msgContains string
	}{
		{name: "fresh install, empty value, HC names their NAD: mirrored, nothing written",
			in:     Input{Own: off, HyperConverged: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			source: ns + "/their-mig", reason: ReasonMirrored, status: "True", msgContains: "to let migranet decide"},
		{name: "fresh install, empty value, HC names nothing: the pod network mirrored, nothing written (never clears HCO's choice)",
			in:     Input{Own: off, HyperConverged: hyperConverged(f, ""), KubeVirt: kubeVirt("")},
			source: "", reason: ReasonMirrored, status: "True", msgContains: "pod network"},
		{name: "a value set for the first time wins over HC's network",
			in:    Input{Own: a, HyperConverged: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			write: true, written: a.Hash, source: "-", reason: ReasonNotApplied, status: "False", msgContains: "still names \"their-mig\""},
		{name: "migranet's write stands and HCO copied it",
			in:    Input{Own: a, WrittenHash: a.Hash, HyperConverged: hyperConverged(f, a.NAD), KubeVirt: kubeVirt(a.NAD)},
			write: true, written: a.Hash, source: "-", reason: ReasonApplied, status: "True", msgContains: "HCO copied it"},
		{name: "HC names migranet's NAD, HCO has not copied it yet",
			in:    Input{Own: a, WrittenHash: a.Hash, HyperConverged: hyperConverged(f, a.NAD), KubeVirt: kubeVirt("their-mig")},
			write: true, written: a.Hash, source: "-", reason: ReasonNotApplied, status: "False", msgContains: "until HCO copies it"},
		{name: "HC edited after migranet's write: followed, not reverted",
			in:     Input{Own: a, WrittenHash: a.Hash, HyperConverged: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			source: ns + "/their-mig", reason: ReasonMirrored, status: "True", msgContains: "follows the newer edit"},
		{name: "HC edited, then migranet's value changed: the value is newer and wins",
			in:    Input{Own: b, WrittenHash: a.Hash, HyperConverged: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			write: true, written: b.Hash, source: "-", reason: ReasonNotApplied, status: "False"},
		{name: "value cleared after migranet wrote one: the pod network is written",
			in:    Input{Own: off, WrittenHash: a.Hash, HyperConverged: hyperConverged(f, a.NAD), KubeVirt: kubeVirt(a.NAD)},
			write: true, written: v1beta1.DisabledHash, source: "-", reason: ReasonNotApplied, status: "False"},
		{name: "value cleared and written; HC set to a network later: followed",
			in:     Input{Own: off, WrittenHash: v1beta1.DisabledHash, HyperConverged: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			source: ns + "/their-mig", reason: ReasonMirrored, status: "True"},
		{name: "HC edited to a NAD HCO has not copied: in force is the KubeVirt CR's",
			in:     Input{Own: a, WrittenHash: a.Hash, HyperConverged: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt(a.NAD)},
			source: ns + "/" + a.NAD, reason: ReasonNotApplied, status: "False", msgContains: "HCO has not copied it"},
		{name: "the KubeVirt CR names a NAD of another type: not judged, previous mirror kept",
			in:     Input{Own: off, HyperConverged: hyperConverged(f, "not-a-migration-net"), KubeVirt: kubeVirt("not-a-migration-net")},
			source: "-", reason: ReasonNADUnreadable, status: "False", msgContains: "not-a-migration-net"},
		{name: "the KubeVirt CR names a missing NAD",
			in:     Input{Own: off, HyperConverged: hyperConverged(f, "gone"), KubeVirt: kubeVirt("gone")},
			source: "-", reason: ReasonNADUnreadable, status: "False", msgContains: "does not exist"},
		{name: "no HyperConverged CR: nothing written even with a value",
			in:     Input{Own: a, KubeVirt: kubeVirt("")},
			source: "", reason: ReasonHyperConvergedNotFound, status: "False", msgContains: "does not exist"},
		{name: "no KubeVirt CR yet, value set: written to the HC",
			in:    Input{Own: a, HyperConverged: hyperConverged(f, "")},
			write: true, written: a.Hash, source: "-", reason: ReasonNotApplied, status: "False"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Field, tc.in.Key, tc.in.NADs = f, key, nads
			d := Decide(tc.in)
			if d.Write != tc.write || d.WrittenHash != tc.written {
				t.Errorf("write %v %q, want %v %q", d.Write, d.WrittenHash, tc.write, tc.written)
			}
			switch {
			case tc.source == "-" && d.Source != nil:
				t.Errorf("source %+v, want none", d.Source)
			case tc.source != "-" && d.Source == nil:
				t.Errorf("no source, want %q", tc.source)
			case tc.source != "-" && d.Source.NetworkAttachmentDefinition != tc.source:
				t.Errorf("source NAD %q, want %q", d.Source.NetworkAttachmentDefinition, tc.source)
			case d.Source != nil && (d.Source.Kind != v1beta1.SourceHyperConverged || d.Source.Setting != "hyperconvergeds.hco.kubevirt.io/"+ns+"/"+Name):
				t.Errorf("source %+v", d.Source)
			}
			if d.Configured.Reason != tc.reason || d.Configured.Status != tc.status || !strings.Contains(d.Configured.Message, tc.msgContains) {
				t.Errorf("Configured %s %s %q, want %s %s containing %q", d.Configured.Status, d.Configured.Reason, d.Configured.Message, tc.status, tc.reason, tc.msgContains)
			}
			if tc.source != "-" && tc.source != "" && d.Source != nil && (d.Network == nil || d.Source.Value != string(d.Network.Canonical())) {
				t.Errorf("mirrored network %v, source value %q", d.Network, d.Source.Value)
			}
			for _, n := range []string{tc.in.Field.Get(tc.in.HyperConverged), settings.MigrationNetworkOf(tc.in.KubeVirt)} {
				if n != "" && !contains(d.Keep, n) {
					t.Errorf("Keep %v lacks %q: the cleanup would delete a NAD in use", d.Keep, n)
				}
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
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
