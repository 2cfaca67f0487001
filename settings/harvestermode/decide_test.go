package harvestermode

import (
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

const (
	ns     = "harvester-system"
	valueA = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`
	valueB = `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`
	// What Harvester renders from valueA and valueB (CreateBridgeConfig), with the mtu the network
	// controller's mutator adds for a 9000 uplink.
	configA = `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,"mtu":9000,` +
		`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`
	configB = `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":200,` +
		`"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`
)

// harvesterSetting is Harvester's setting with value, the hash its controller applied last ("":
// no annotation) and its configured condition (empty: none).
func harvesterSetting(value, applied, condStatus, reason string) *unstructured.Unstructured {
	u := NewSetting()
	u.SetName("vm-migration-network")
	u.Object["value"] = value
	if applied != "" {
		u.SetAnnotations(map[string]string{AnnotationAppliedHash: applied})
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
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:      map[string]string{settings.LabelHarvesterMigrationHash: hashOf(value)},
			Annotations: map[string]string{settings.AnnotationHarvesterMigrationNetwork: "true"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
	}
}

func kubeVirtOn(network string) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubevirt"}}
	if network != "" {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{Network: &network}
	}
	return kv
}

func TestDecide(t *testing.T) {
	nadA := harvesterNAD("vm-migration-network-abcde", valueA, configA)
	nadB := harvesterNAD("vm-migration-network-fghij", valueB, configB)
	plain := nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: configB}}
	hostLocal := harvesterNAD("vm-migration-network-zzzzz", valueB,
		`{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","vlan":200,"ipam":{"type":"host-local","subnet":"10.52.0.0/24"}}`)
	cases := []struct {
		name string
		in   Input
		// wantNAD is status.source.networkAttachmentDefinition; "-" wants no source (kept).
		wantNAD, wantValue string
		wantStatus         metav1.ConditionStatus
		wantReason         string
		wantMessage        string // a part of Configured's message
		wantGuard          []string
	}{
		{name: "no KubeVirt CR", in: Input{Harvester: harvesterSetting(valueA, hashOf(valueA), "True", "")},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonKubeVirtNotFound, wantMessage: "no KubeVirt CR in namespace " + ns},
		{name: "first start, empty value", in: Input{Harvester: harvesterSetting("", "", "", ""), KubeVirt: kubeVirtOn("")},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirrored, wantMessage: "is empty: migrations use the pod network"},
		{name: "value in force", in: Input{Harvester: harvesterSetting(valueA, hashOf(valueA), "True", ""), KubeVirt: kubeVirtOn(nadA.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA}},
			wantNAD: ns + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirrored, wantMessage: "KubeVirt migrates over NetworkAttachmentDefinition " + ns + "/" + nadA.Name,
			wantGuard: []string{nadA.Name}},
		{name: "new value not rendered yet", in: Input{Harvester: harvesterSetting(valueB, hashOf(valueA), "True", ""), KubeVirt: kubeVirtOn(nadA.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA}},
			wantNAD: ns + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterPending, wantMessage: "has not applied the value",
			wantGuard: []string{nadA.Name}},
		{name: "new NAD created, CR not moved yet: both guarded", in: Input{Harvester: harvesterSetting(valueB, hashOf(valueA), "True", ""),
			KubeVirt: kubeVirtOn(nadA.Name), NADs: []nadv1.NetworkAttachmentDefinition{nadB, nadA}},
			wantNAD: ns + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterPending, wantGuard: []string{nadA.Name, nadB.Name}},
		{name: "hash recorded but CR still on the old NAD", in: Input{Harvester: harvesterSetting(valueB, hashOf(valueB), "True", ""),
			KubeVirt: kubeVirtOn(nadA.Name), NADs: []nadv1.NetworkAttachmentDefinition{nadA, nadB}},
			wantNAD: ns + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterPending, wantGuard: []string{nadA.Name, nadB.Name}},
		{name: "Harvester failed", in: Input{Harvester: harvesterSetting(valueB, hashOf(valueB), "False", "CreateNadError"), KubeVirt: kubeVirtOn(nadA.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA}},
			wantNAD: ns + "/" + nadA.Name, wantValue: `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterPending, wantMessage: "False, CreateNadError: boom",
			wantGuard: []string{nadA.Name}},
		{name: "moved to the new value", in: Input{Harvester: harvesterSetting(valueB, hashOf(valueB), "True", ""), KubeVirt: kubeVirtOn(nadB.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadA, nadB}},
			wantNAD: ns + "/" + nadB.Name, wantValue: `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`,
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirrored, wantGuard: []string{nadA.Name, nadB.Name}},
		{name: "emptied and rolled back", in: Input{Harvester: harvesterSetting("", hashOf(""), "True", ""), KubeVirt: kubeVirtOn("")},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirrored, wantMessage: "pod network"},
		{name: "emptied, CR not cleared yet", in: Input{Harvester: harvesterSetting("", hashOf(valueB), "True", ""), KubeVirt: kubeVirtOn(nadB.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{nadB}},
			wantNAD: ns + "/" + nadB.Name, wantValue: `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterPending, wantGuard: []string{nadB.Name}},
		{name: "CR names a missing NAD: kept, guarded", in: Input{Harvester: harvesterSetting(valueA, hashOf(valueA), "True", ""), KubeVirt: kubeVirtOn("gone")},
			wantNAD: "-", wantStatus: metav1.ConditionFalse, wantReason: ReasonNADUnreadable, wantMessage: ns + "/gone, which does not exist", wantGuard: []string{"gone"}},
		{name: "CR names a NAD migranet cannot read", in: Input{Harvester: harvesterSetting(valueB, hashOf(valueB), "True", ""), KubeVirt: kubeVirtOn(hostLocal.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{hostLocal}},
			wantNAD: "-", wantStatus: metav1.ConditionFalse, wantReason: ReasonNADUnreadable, wantMessage: "spec.config.ipam.type", wantGuard: []string{hostLocal.Name}},
		{name: "CR names a NAD Harvester did not render", in: Input{Harvester: harvesterSetting(valueB, hashOf(valueB), "True", ""), KubeVirt: kubeVirtOn(plain.Name),
			NADs: []nadv1.NetworkAttachmentDefinition{plain}},
			wantNAD: ns + "/" + plain.Name, wantValue: `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`,
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterPending, wantMessage: "which Harvester did not render", wantGuard: []string{plain.Name}},
		{name: "no Harvester setting", in: Input{KubeVirt: kubeVirtOn("")},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHarvesterPending, wantMessage: SettingRef + " does not exist"},
		{name: "own value said to be ignored", in: Input{Harvester: harvesterSetting("", "", "", ""), KubeVirt: kubeVirtOn(""), OwnValue: valueA},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonMirrored, wantMessage: "this setting's own value is not applied in Harvester mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Namespace = ns
			d := Decide(tc.in)
			c := d.Configured
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMessage) {
				t.Errorf("Configured = %s %s %q, want %s %s containing %q", c.Status, c.Reason, c.Message, tc.wantStatus, tc.wantReason, tc.wantMessage)
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
	nadA := harvesterNAD("vm-migration-network-abcde", valueA, configA)
	d := Decide(Input{Namespace: ns, Harvester: harvesterSetting(valueA, hashOf(valueA), "True", ""), KubeVirt: kubeVirtOn(nadA.Name),
		NADs: []nadv1.NetworkAttachmentDefinition{nadA}})
	s := ownSetting(valueB)
	s.Status.Source = d.Source
	eff := settings.EffectiveNetwork(s)
	if eff.NAD != nadA.Name || eff.Network == nil || eff.Network.VLAN != 100 || eff.Network.MTU != 9000 || len(eff.Errs) > 0 {
		t.Fatalf("EffectiveNetwork = NAD %q network %+v errs %v, want %s, VLAN 100, MTU 9000", eff.NAD, eff.Network, eff.Errs, nadA.Name)
	}
	if own := settings.ValueNetwork(s); own.Network == nil || own.Network.VLAN != 200 {
		t.Errorf("ValueNetwork = %+v, want the setting's own value (VLAN 200)", own.Network)
	}
	s.Status.Source = &v1beta1.NetworkSource{Kind: "Harvester", Setting: SettingRef}
	if eff := settings.EffectiveNetwork(s); !eff.Disabled() {
		t.Errorf("EffectiveNetwork of a source on the pod network = %+v, want disabled", eff)
	}
}

func ownSetting(value string) *v1beta1.Setting {
	return &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}, Value: value}
}
