package decider

import (
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/settings/v1beta1"
)

const (
	hcoNS     = "openshift-cnv"
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

func hyperConverged(f hcomode.Field, network string) *unstructured.Unstructured {
	u := f.New()
	u.SetNamespace(hcoNS)
	u.SetName(hcomode.Name)
	u.Object["spec"] = map[string]any{"liveMigrationConfig": map[string]any{"progressTimeout": int64(150)}}
	if network != "" {
		_ = unstructured.SetNestedField(u.Object, network, strings.Split(f.Path(), ".")...)
	}
	return u
}

func kubeVirt(network string) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: hcoNS, Name: "kubevirt-kubevirt-hyperconverged"}}
	if network != "" {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{Network: &network}
	}
	return kv
}

func nad(name, config string, managed bool) nadv1.NetworkAttachmentDefinition {
	n := nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: hcoNS, Name: name}, Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
	if managed {
		n.Labels = map[string]string{settings.LabelManagedBy: settings.ManagedBy}
	}
	return n
}

func TestHCODecide(t *testing.T) {
	f, _ := hcomode.FieldOf(hcomode.V1beta1)
	a, b, off := own(t, ownValue), own(t, ownValue2), own(t, "")
	rendered := settings.RenderNAD(a, hcoNS)
	nads := []nadv1.NetworkAttachmentDefinition{*rendered, nad("their-mig", theirConfig, false), nad("not-a-migration-net", `{"type":"sriov"}`, false),
		nad("chained", `{"cniVersion":"0.4.0","plugins":[`+theirConfig+`,{"type":"tuning","mtu":1400}]}`, false),
		nad("no-ipam", `{"cniVersion":"0.3.1","type":"bridge","bridge":"mig-br"}`, false)}
	key := client.ObjectKey{Namespace: hcoNS, Name: hcomode.Name}
	cases := []struct {
		name        string
		in          Observed
		own         bool
		written     string
		source      string // status.source.networkAttachmentDefinition; "-" for no source
		notJudged   string // a part of status.source.notJudged; "" wants it empty and the network read
		reason      string
		status      metav1.ConditionStatus
		msgContains string
	}{
		{name: "fresh install, empty value, HC names their NAD: mirrored, nothing written",
			in:     Observed{Own: off, Owner: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			source: hcoNS + "/their-mig", reason: ReasonMirroredFromHyperConverged, status: "True", msgContains: "to let migranet decide"},
		{name: "fresh install, empty value, HC names nothing: the pod network mirrored, nothing written (never clears HCO's choice)",
			in:     Observed{Own: off, Owner: hyperConverged(f, ""), KubeVirt: kubeVirt("")},
			source: "", reason: ReasonMirroredFromHyperConverged, status: "True", msgContains: "pod network"},
		{name: "a value set for the first time wins over HC's network",
			in:  Observed{Own: a, Owner: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			own: true, written: a.Hash, source: "-", reason: ReasonHyperConvergedNotApplied, status: "False", msgContains: "still names \"their-mig\""},
		{name: "migranet's write stands and HCO copied it",
			in:  Observed{Own: a, WrittenHash: a.Hash, Owner: hyperConverged(f, a.NAD), KubeVirt: kubeVirt(a.NAD)},
			own: true, written: a.Hash, source: "-", reason: ReasonApplied, status: "True", msgContains: "HCO copied it"},
		{name: "HC names migranet's NAD, HCO has not copied it yet",
			in:  Observed{Own: a, WrittenHash: a.Hash, Owner: hyperConverged(f, a.NAD), KubeVirt: kubeVirt("their-mig")},
			own: true, written: a.Hash, source: "-", reason: ReasonHyperConvergedNotApplied, status: "False", msgContains: "until HCO copies it"},
		{name: "HC edited after migranet's write: followed, not reverted",
			in:     Observed{Own: a, WrittenHash: a.Hash, Owner: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			source: hcoNS + "/their-mig", reason: ReasonMirroredFromHyperConverged, status: "True", msgContains: "follows the newer edit"},
		{name: "HC edited, then migranet's value changed: the value is newer and wins",
			in:  Observed{Own: b, WrittenHash: a.Hash, Owner: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			own: true, written: b.Hash, source: "-", reason: ReasonHyperConvergedNotApplied, status: "False"},
		{name: "value cleared after migranet wrote one: the pod network is written",
			in:  Observed{Own: off, WrittenHash: a.Hash, Owner: hyperConverged(f, a.NAD), KubeVirt: kubeVirt(a.NAD)},
			own: true, written: v1beta1.DisabledHash, source: "-", reason: ReasonHyperConvergedNotApplied, status: "False"},
		{name: "value cleared and written; HC set to a network later: followed",
			in:     Observed{Own: off, WrittenHash: v1beta1.DisabledHash, Owner: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt("their-mig")},
			source: hcoNS + "/their-mig", reason: ReasonMirroredFromHyperConverged, status: "True"},
		{name: "HC edited to a NAD HCO has not copied: in force is the KubeVirt CR's",
			in:     Observed{Own: a, WrittenHash: a.Hash, Owner: hyperConverged(f, "their-mig"), KubeVirt: kubeVirt(a.NAD)},
			source: hcoNS + "/" + a.NAD, reason: ReasonHyperConvergedNotApplied, status: "False", msgContains: "HCO has not copied it"},
		// Issue 52, item 1: a NAD migranet does not judge is in force all the same; the status must
		// say so, never keep describing the network that was in force before.
		{name: "the KubeVirt CR names a NAD of another type: in force, not judged",
			in:     Observed{Own: off, Owner: hyperConverged(f, "not-a-migration-net"), KubeVirt: kubeVirt("not-a-migration-net")},
			source: hcoNS + "/not-a-migration-net", notJudged: `spec.config.type "sriov"`, reason: ReasonMirroredFromHyperConverged, status: "True", msgContains: "which migranet does not judge"},
		{name: "migranet's value was in force, then HC edited to a plugin list: in force, not judged",
			in:     Observed{Own: a, WrittenHash: a.Hash, Owner: hyperConverged(f, "chained"), KubeVirt: kubeVirt("chained")},
			source: hcoNS + "/chained", notJudged: "spec.config.plugins", reason: ReasonMirroredFromHyperConverged, status: "True", msgContains: "follows the newer edit"},
		{name: "HC edited to a bridge NAD without IPAM (admitted while migranet was down): in force, not judged, the problem named",
			in:     Observed{Own: a, WrittenHash: a.Hash, Owner: hyperConverged(f, "no-ipam"), KubeVirt: kubeVirt("no-ipam")},
			source: hcoNS + "/no-ipam", notJudged: "not a migration network migranet can read", reason: ReasonMirroredFromHyperConverged, status: "True"},
		{name: "HC edited to a NAD of another type HCO has not copied: the KubeVirt CR's network is still in force and judged",
			in:     Observed{Own: a, WrittenHash: a.Hash, Owner: hyperConverged(f, "not-a-migration-net"), KubeVirt: kubeVirt(a.NAD)},
			source: hcoNS + "/" + a.NAD, reason: ReasonHyperConvergedNotApplied, status: "False", msgContains: "HCO has not copied it"},
		{name: "the KubeVirt CR names a missing NAD",
			in:     Observed{Own: off, Owner: hyperConverged(f, "gone"), KubeVirt: kubeVirt("gone")},
			source: "-", reason: ReasonNADUnreadable, status: "False", msgContains: "does not exist"},
		{name: "no HyperConverged CR: nothing written even with a value",
			in:     Observed{Own: a, KubeVirt: kubeVirt("")},
			source: "", reason: ReasonHyperConvergedNotFound, status: "False", msgContains: "does not exist"},
		{name: "no KubeVirt CR yet, value set: written to the HC",
			in:  Observed{Own: a, Owner: hyperConverged(f, "")},
			own: true, written: a.Hash, source: "-", reason: ReasonHyperConvergedNotApplied, status: "False"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.NADs, tc.in.Namespace = nads, hcoNS
			h := HCO{Key: key, Field: f}
			d := h.Decide(tc.in)
			if d.Own != tc.own || d.WrittenHash != tc.written {
				t.Errorf("own %v %q, want %v %q", d.Own, d.WrittenHash, tc.own, tc.written)
			}
			// The write is the HyperConverged CR's one field, only when it differs; never the
			// KubeVirt CR.
			switch wantPoint := d.Own && f.Get(tc.in.Owner) != tc.in.Own.NAD; {
			case wantPoint && (d.Point == nil || d.Point.Object != tc.in.Owner || string(d.Point.Patch) != string(f.Patch(tc.in.Own.NAD))):
				t.Errorf("point %+v, want the HyperConverged CR's field set to %q", d.Point, tc.in.Own.NAD)
			case !wantPoint && d.Point != nil:
				t.Errorf("point %+v, want none", d.Point)
			}
			switch {
			case tc.source == "-" && d.Source != nil:
				t.Errorf("source %+v, want none", d.Source)
			case tc.source != "-" && d.Source == nil:
				t.Errorf("no source, want %q", tc.source)
			case tc.source != "-" && d.Source.NetworkAttachmentDefinition != tc.source:
				t.Errorf("source NAD %q, want %q", d.Source.NetworkAttachmentDefinition, tc.source)
			case d.Source != nil && (d.Source.Kind != v1beta1.SourceHyperConverged || d.Source.Setting != "hyperconvergeds.hco.kubevirt.io/"+hcoNS+"/"+hcomode.Name):
				t.Errorf("source %+v", d.Source)
			}
			if d.Configured.Reason != tc.reason || d.Configured.Status != tc.status || !strings.Contains(d.Configured.Message, tc.msgContains) {
				t.Errorf("Configured %s %s %q, want %s %s containing %q", d.Configured.Status, d.Configured.Reason, d.Configured.Message, tc.status, tc.reason, tc.msgContains)
			}
			switch {
			case tc.notJudged != "" && (d.Source == nil || !strings.Contains(d.Source.NotJudged, tc.notJudged) || d.Source.Value != "" || d.Network != nil):
				t.Errorf("source %+v network %v, want not judged (%q), no value, no network", d.Source, d.Network, tc.notJudged)
			case tc.notJudged == "" && d.Source != nil && d.Source.NotJudged != "":
				t.Errorf("source %+v, want the network judged", d.Source)
			case tc.notJudged == "" && tc.source != "-" && tc.source != "" && d.Source != nil && (d.Network == nil || d.Source.Value != string(d.Network.Canonical())):
				t.Errorf("mirrored network %v, source value %q", d.Network, d.Source.Value)
			}
			if d.Source != nil && d.Source.NetworkAttachmentDefinition != "" && !contains(d.Guard, strings.TrimPrefix(d.Source.NetworkAttachmentDefinition, hcoNS+"/")) {
				t.Errorf("Guard %v lacks the NAD in force %s", d.Guard, d.Source.NetworkAttachmentDefinition)
			}
			// Issue 52, item 2: while the HyperConverged CR decides and migranet's value is set, the
			// value's NAD stays rendered and kept, or the documented hand-back (the field set to it
			// again) meets a missing NAD; with no value (the near miss) nothing is kept for it.
			if wantOwn := !d.Own && tc.in.Own.Network != nil; d.RenderOwn != wantOwn || (wantOwn && !contains(d.Keep, tc.in.Own.NAD)) {
				t.Errorf("RenderOwn %v Keep %v, want RenderOwn %v and %q kept", d.RenderOwn, d.Keep, wantOwn, tc.in.Own.NAD)
			}
			for _, n := range []string{f.Get(tc.in.Owner), settings.MigrationNetworkOf(tc.in.KubeVirt)} {
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
