package status

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInferNetwork(t *testing.T) {
	migrationNet := Header(newSetting(netValue, cond("Ready", metav1.ConditionTrue, "AllNodesAttached", "")))
	podNet := Header(newSetting("", cond("Ready", metav1.ConditionTrue, "PodNetwork", "")))
	tests := []struct {
		name      string
		net       Network
		row       Row
		network   string
		source    string
		unchanged bool
	}{
		{name: "address in the range", net: migrationNet, row: Row{InFlight: true, TargetAddress: "192.168.100.7"}, network: "Migration", source: NetworkFromAddress},
		{name: "IPv4-mapped address in the range", net: migrationNet, row: Row{InFlight: true, TargetAddress: "::ffff:192.168.100.7"}, network: "Migration", source: NetworkFromAddress},
		{name: "address outside the range", net: migrationNet, row: Row{InFlight: true, TargetAddress: "10.244.0.2"}, network: "Pod", source: NetworkFromAddress},
		{name: "pod network in force", net: podNet, row: Row{InFlight: true, TargetAddress: "10.244.0.2"}, network: "Pod", source: NetworkFromAddress},
		{name: "reported wins", net: migrationNet, row: Row{InFlight: true, TargetAddress: "10.244.0.2", Network: "Migration", NetworkSource: NetworkReported}, unchanged: true},
		{name: "no address yet", net: migrationNet, row: Row{InFlight: true}, unchanged: true},
		{name: "bad address", net: migrationNet, row: Row{InFlight: true, TargetAddress: "node-2"}, unchanged: true},
		{name: "finished, configuration not reported", net: migrationNet, row: Row{TargetAddress: "192.168.100.7"}, unchanged: true},
		{name: "finished with the NAD in force", net: migrationNet, row: Row{TargetAddress: "192.168.100.7", ConfiguredNAD: migrationNet.NAD, configKnown: true}, network: "Migration", source: NetworkFromAddress},
		{name: "finished with the NAD in force, pod address", net: migrationNet, row: Row{TargetAddress: "10.244.0.2", ConfiguredNAD: migrationNet.NAD, configKnown: true}, network: "Pod", source: NetworkFromAddress},
		{name: "finished with an earlier NAD", net: migrationNet, row: Row{TargetAddress: "192.168.100.7", ConfiguredNAD: "vm-migration-network-0123456789", configKnown: true}, unchanged: true},
		{name: "finished on the pod network, migration network in force now", net: migrationNet, row: Row{TargetAddress: "10.244.0.2", configKnown: true}, unchanged: true},
		{name: "finished on the pod network in force", net: podNet, row: Row{TargetAddress: "10.244.0.2", configKnown: true}, network: "Pod", source: NetworkFromAddress},
		{name: "finished with a NAD, pod network in force now", net: podNet, row: Row{TargetAddress: "192.168.100.7", ConfiguredNAD: "vm-migration-network-0123456789", configKnown: true}, unchanged: true},
		{name: "network unknown", net: Header(nil), row: Row{InFlight: true, TargetAddress: "192.168.100.7"}, unchanged: true},
		{name: "invalid value", net: Header(newSetting(`{"range":`)), row: Row{InFlight: true, TargetAddress: "192.168.100.7"}, unchanged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows := []Row{tc.row}
			InferNetwork(rows, tc.net)
			if tc.unchanged {
				if !reflect.DeepEqual(rows[0], tc.row) {
					t.Errorf("row changed: %+v", rows[0])
				}
				return
			}
			if rows[0].Network != tc.network || rows[0].NetworkSource != tc.source {
				t.Errorf("network %q from %q, want %q from %q", rows[0].Network, rows[0].NetworkSource, tc.network, tc.source)
			}
		})
	}
}
