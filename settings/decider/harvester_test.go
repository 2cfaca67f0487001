package decider

import (
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/v1beta1"
)

const (
	hvNS     = "harvester-system"
	hvValueA = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`
	hvValueB = `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`
	// What Harvester renders from hvValueA and hvValueB (CreateBridgeConfig), with the mtu the network
	// controller's mutator adds for a 9000 uplink.
	hvConfigA = `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,"mtu":9000,` +
		`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`
	hvConfigB = `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":200,` +
		`"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`
)

// harvesterSetting is Harvester's setting with value, the hash its controller applied last ("":
// no annotation) and its configured condition (empty: none).
func harvesterSetting(value, applied, condStatus, reason string) *unstructured.Unstructured {
	u := harvestermode.NewSetting()
	u.SetName("vm-migration-network")
	u.Object["value"] = value
	if applied != "" {
		u.SetAnnotations(map[string]string{harvestermode.AnnotationAppliedHash: applied})
	}
	if condStatus != "" {
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": "configured", "status": condStatus, "reason": reason, "message": "boom"}}}
	}
	return u
}

// harvesterNAD is a NAD as Harvester renders it for value.
func harvesterNAD(name, value, config string) nadv1.NetworkAttachmentDefinition {
	return nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: hvNS, Name: name,
			Labels:      map[string]string{settings.LabelHarvesterMigrationHash: hashOf(value)},
			Annotations: map[string]string{settings.AnnotationHarvesterMigrationNetwork: "true"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
	}
}

func kubeVirtOn(network string) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: hvNS, Name: "kubevirt"}}
	if network != "" {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{Network: &network}
	}
	return kv
}

func TestHarvesterDecide(t *testing.T) {
	nadA := harvesterNAD("vm-migration-network-abcde", hvValueA, hvConfigA)
	nadB := harvesterNAD("vm-migration-network-fghij", hvValueB, hvConfigB)
	plain := nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: hvNS, Name: "by-hand"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: hvConfigB}}
	hostLocal := harvesterNAD("vm-migration-network-zzzzz", hvValueB,
		`{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","vlan":200,"ipam":{"type":"host-local","subnet":"10.52.0.0/24"}}`)
	noIPAM := nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: hvNS, Name: "no-ipam"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br"}`}}
	cases := []struct {
		name string
		in   Observed
		// wantNAD is status.source.networkAttachmentDefinition; "-" wants no source (kept).
		wantNAD, wantValue string
		// wantNotJudged is a part of status.source.notJudged; "" wants it empty.
		wantNotJudged string
		wantStatus    metav1.ConditionStatus
		wantReason    string
		wantMessage   string // a part of Configured's message
		notMessage    string // not a part of it ("" for no check)
		wantGuard     []string
	}{
		{name: "no KubeVirt CR", in: Observed{Owner: harvesterSetting(hvValueA, hashOf(hvValueA), "True", "")},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonKubeVirtNotFound, wantMessage: "no KubeVirt CR in namespace " + hvNS},
		{name: "first start, empty value", in: Observed{Owner: harvesterSetting("", "", "", ""), KubeVirt: kubeVirtOn("")},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirroredFromHarvester, wantMessage: "is empty: migrations use the pod network"},
		{name: "value in force", in: Observed{Owner: harvesterSetting(hvValueA, hashOf(hvValueA), "True", ""), KubeVirt: kubeVirtOn(nadA.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA}},
			wantNAD: hvNS + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirroredFromHarvester, wantMessage: "KubeVirt migrates over NetworkAttachmentDefinition " + hvNS + "/" + nadA.Name,
			wantGuard: []string{nadA.Name}},
		{name: "new value not rendered yet", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueA), "True", ""), KubeVirt: kubeVirtOn(nadA.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA}},
			wantNAD: hvNS + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantMessage: "has not applied the value",
			wantGuard: []string{nadA.Name}},
		{name: "new NAD created, CR not moved yet: both guarded", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueA), "True", ""),
			KubeVirt: kubeVirtOn(nadA.Name), NADs: []nadv1.NetworkAttachmentDefinition{nadB, nadA}},
			wantNAD: hvNS + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantGuard: []string{nadA.Name, nadB.Name}},
		{name: "hash recorded but CR still on the old NAD", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueB), "True", ""),
			KubeVirt: kubeVirtOn(nadA.Name), NADs: []nadv1.NetworkAttachmentDefinition{nadA, nadB}},
			wantNAD: hvNS + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantGuard: []string{nadA.Name, nadB.Name}},
		{name: "Harvester failed", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueB), "False", "CreateNadError"), KubeVirt: kubeVirtOn(nadA.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA}},
			wantNAD: hvNS + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantMessage: "False, CreateNadError: boom",
			wantGuard: []string{nadA.Name}},
		// Harvester records the hash of the value it tried even when it failed, and never tries it
		// again (a conflict on the KubeVirt CR, seen in CI): the way out is named.
		{name: "Harvester failed on this value: the hash it recorded is named", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueB), "False", "UpdateKubeVirtError"),
			KubeVirt: kubeVirtOn(nadA.Name), NADs: []nadv1.NetworkAttachmentDefinition{nadA, nadB}},
			wantNAD: hvNS + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied,
			wantMessage: "mtu 9000); Harvester does not try a value again once it recorded its hash: " +
				"remove the annotation (kubectl annotate settings.harvesterhci.io/vm-migration-network vm-migration-network.settings.harvesterhci.io/hash-)",
			wantGuard: []string{nadA.Name, nadB.Name}},
		// The near miss: the failure was an earlier value's, the new one is still to be tried.
		{name: "Harvester failed on an earlier value, the new one not tried yet", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueA), "False", "UpdateKubeVirtError"),
			KubeVirt: kubeVirtOn(nadA.Name), NADs: []nadv1.NetworkAttachmentDefinition{nadA}},
			wantNAD: hvNS + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantMessage: "False, UpdateKubeVirtError", notMessage: "does not try a value again",
			wantGuard: []string{nadA.Name}},
		{name: "moved to the new value", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueB), "True", ""), KubeVirt: kubeVirtOn(nadB.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA, nadB}},
			wantNAD: hvNS + "/" + nadB.Name, wantValue: `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`,
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirroredFromHarvester, wantGuard: []string{nadA.Name, nadB.Name}},
		{name: "emptied and rolled back", in: Observed{Owner: harvesterSetting("", hashOf(""), "True", ""), KubeVirt: kubeVirtOn("")},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirroredFromHarvester, wantMessage: "pod network"},
		{name: "emptied, CR not cleared yet", in: Observed{Owner: harvesterSetting("", hashOf(hvValueB), "True", ""), KubeVirt: kubeVirtOn(nadB.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadB}},
			wantNAD: hvNS + "/" + nadB.Name, wantValue: `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantGuard: []string{nadB.Name}},
		{name: "CR names a missing NAD: kept, guarded", in: Observed{Owner: harvesterSetting(hvValueA, hashOf(hvValueA), "True", ""), KubeVirt: kubeVirtOn("gone")},
			wantNAD: "-", wantStatus: metav1.ConditionFalse, wantReason: ReasonNADUnreadable, wantMessage: hvNS + "/gone, which does not exist", wantGuard: []string{"gone"}},
		// Issue 52, item 1: in force all the same, so the status says what is in force and that it
		// is not judged, never the network mirrored before.
		{name: "CR names a NAD migranet does not judge (host-local IPAM)", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueB), "True", ""), KubeVirt: kubeVirtOn(hostLocal.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{hostLocal}},
			wantNAD: hvNS + "/" + hostLocal.Name, wantNotJudged: "spec.config.ipam.type", wantStatus: metav1.ConditionTrue, wantReason: ReasonMirroredFromHarvester,
			wantMessage: "which migranet does not judge", wantGuard: []string{hostLocal.Name}},
		{name: "CR names a bridge NAD without IPAM Harvester did not render", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueB), "True", ""), KubeVirt: kubeVirtOn(noIPAM.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{noIPAM}},
			wantNAD: hvNS + "/" + noIPAM.Name, wantNotJudged: "not a migration network migranet can read", wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied,
			wantMessage: "which Harvester did not render", wantGuard: []string{noIPAM.Name}},
		{name: "CR names a NAD Harvester did not render", in: Observed{Owner: harvesterSetting(hvValueB, hashOf(hvValueB), "True", ""), KubeVirt: kubeVirtOn(plain.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{plain}},
			wantNAD: hvNS + "/" + plain.Name, wantValue: `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantMessage: "which Harvester did not render", wantGuard: []string{plain.Name}},
		{name: "no Harvester setting", in: Observed{KubeVirt: kubeVirtOn("")},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterNotApplied, wantMessage: harvestermode.SettingRef + " does not exist"},
		{name: "own value said to be ignored", in: Observed{Owner: harvesterSetting("", "", "", ""), KubeVirt: kubeVirtOn(""), OwnValue: hvValueA},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirroredFromHarvester, wantMessage: "this setting's own value is not applied in Harvester mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Namespace = hvNS
			d := Harvester{Namespace: hvNS}.Decide(tc.in)
			c := d.Configured
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMessage) {
				t.Errorf("Configured = %s %s %q, want %s %s containing %q", c.Status, c.Reason, c.Message, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
			if tc.notMessage != "" && strings.Contains(c.Message, tc.notMessage) {
				t.Errorf("Configured's message %q says %q", c.Message, tc.notMessage)
			}
			switch {
			case tc.wantNAD == "-":
				if d.Source != nil {
					t.Errorf("source = %+v, want none (the stored one kept)", *d.Source)
				}
			case d.Source == nil:
				t.Fatalf("source = nil, want NAD %q", tc.wantNAD)
			case d.Source.Kind != "Harvester" || d.Source.Setting != "settings.harvesterhci.io/vm-migration-network" ||
				d.Source.NetworkAttachmentDefinition != tc.wantNAD || d.Source.Value != tc.wantValue:
				t.Errorf("source = %+v, want NAD %q value %s", *d.Source, tc.wantNAD, tc.wantValue)
			case (tc.wantNotJudged == "") != (d.Source.NotJudged == "") || !strings.Contains(d.Source.NotJudged, tc.wantNotJudged):
				t.Errorf("source.notJudged = %q, want %q", d.Source.NotJudged, tc.wantNotJudged)
			}
			if (d.Network != nil) != (tc.wantValue != "") {
				t.Errorf("network = %v, want one: %v", d.Network, tc.wantValue != "")
			}
			if strings.Join(d.Guard, ",") != strings.Join(tc.wantGuard, ",") {
				t.Errorf("guard = %v, want %v", d.Guard, tc.wantGuard)
			}
		})
	}
}

// The mirrored source reads back, through settings.EffectiveNetwork, as the network in force
// under Harvester's NAD name: what every part downstream works from.
func TestSourceIsTheNetworkInForce(t *testing.T) {
	nadA := harvesterNAD("vm-migration-network-abcde", hvValueA, hvConfigA)
	d := Harvester{Namespace: hvNS}.Decide(Observed{Namespace: hvNS, Owner: harvesterSetting(hvValueA, hashOf(hvValueA), "True", ""), KubeVirt: kubeVirtOn(nadA.Name),
		NADs: []nadv1.NetworkAttachmentDefinition{nadA}})
	s := ownSetting(hvValueB)
	s.Status.Source = d.Source
	eff := settings.EffectiveNetwork(s)
	if eff.NAD != nadA.Name || eff.Network == nil || eff.Network.VLAN != 100 || eff.Network.MTU != 9000 || len(eff.Errs) > 0 {
		t.Fatalf("EffectiveNetwork = NAD %q network %+v errs %v, want %s, VLAN 100, MTU 9000", eff.NAD, eff.Network, eff.Errs, nadA.Name)
	}
	if own := settings.ValueNetwork(s); own.Network == nil || own.Network.VLAN != 200 {
		t.Errorf("ValueNetwork = %+v, want the setting's own value (VLAN 200)", own.Network)
	}
	s.Status.Source = &v1beta1.NetworkSource{Kind: "Harvester", Setting: harvestermode.SettingRef}
	if eff := settings.EffectiveNetwork(s); !eff.Disabled() {
		t.Errorf("EffectiveNetwork of a source on the pod network = %+v, want disabled", eff)
	}
	// The near miss: a NAD in force that is not judged is neither the pod network nor a network
	// with a hash (a hash would make networkReady judge a rollout it cannot see).
	s.Status.Source = &v1beta1.NetworkSource{Kind: "Harvester", Setting: harvestermode.SettingRef, NetworkAttachmentDefinition: hvNS + "/sriov", NotJudged: "spec.config.type \"sriov\""}
	eff = settings.EffectiveNetwork(s)
	if eff.Disabled() || eff.Network != nil || eff.Hash != "" || eff.NAD != "" || eff.NotJudged == nil || eff.NotJudged.NAD != "sriov" || eff.NotJudged.Ref != hvNS+"/sriov" {
		t.Errorf("EffectiveNetwork of a source not judged = %+v (not judged %+v), want not judged, not disabled, no hash or NAD", eff, eff.NotJudged)
	}
}

func ownSetting(value string) *v1beta1.Setting {
	return &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}, Value: value}
}
