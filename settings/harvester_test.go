package settings

import (
	"net/netip"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// harvesterNAD is a NAD shaped as docs/harvester.md says Harvester v1.8.2's vm-migration-network
// controller leaves it: generated name in harvester-system, its annotation, its SHA-1 hash label,
// and the labels Harvester's network controller adds.
func harvesterNAD(config string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "vm-migration-network-x7k2q",
			Namespace: "harvester-system",
			Labels: map[string]string{
				"vm-migration-network.settings.harvesterhci.io/hash": "0f3c1b0e5d1a7c9e2b4f6a8d0c2e4f6a8b0d2e4f",
				"network.harvesterhci.io/type":                       "L2VlanNetwork",
				"network.harvesterhci.io/vlan-id":                    "100",
				"network.harvesterhci.io/clusternetwork":             "mgmt",
				"network.harvesterhci.io/ready":                      "true",
			},
			Annotations: map[string]string{"vm-migration-network.settings.harvesterhci.io": "true"},
		},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
	}
}

// Harvester-shaped configurations, written from the facts in docs/harvester.md.
const (
	harvesterConfig = `{"cniVersion":"0.3.1","type":"bridge","bridge":"mgmt-br","promiscMode":true,"vlan":100,` +
		`"ipam":{"type":"whereabouts","range":"10.52.0.0/24","exclude":["10.52.0.1/32"]}}`
	harvesterConfigMTU = `{"cniVersion":"0.3.1","type":"bridge","bridge":"mgmt-br","promiscMode":true,"vlan":100,"mtu":9000,` +
		`"ipam":{"type":"whereabouts","range":"10.52.0.0/24","exclude":["10.52.0.1/32"]}}`
)

func TestHarvesterMigrationNAD(t *testing.T) {
	ours := RenderNAD(EffectiveOf(mustNetwork(t, validValue)), "harvester-system")
	oursWithHash := ours.DeepCopy() // a migranet NAD that somehow carries Harvester's label too
	oursWithHash.Labels[LabelHarvesterMigrationHash] = "0f3c1b0e5d1a7c9e2b4f6a8d0c2e4f6a8b0d2e4f"
	noLabel := harvesterNAD(harvesterConfig)
	delete(noLabel.Labels, LabelHarvesterMigrationHash)
	noAnnotation := harvesterNAD(harvesterConfig)
	noAnnotation.Annotations = nil
	falseAnnotation := harvesterNAD(harvesterConfig)
	falseAnnotation.Annotations[AnnotationHarvesterMigrationNetwork] = "false"
	vmNetwork := harvesterNAD(harvesterConfig) // a VM network: the network controller's labels only
	vmNetwork.Annotations = nil
	delete(vmNetwork.Labels, LabelHarvesterMigrationHash)

	tests := []struct {
		name string
		nad  *nadv1.NetworkAttachmentDefinition
		want bool
	}{
		{"Harvester's", harvesterNAD(harvesterConfig), true},
		{"migranet's own (Harvester's annotation, no hash label)", ours, false},
		{"migranet's own with Harvester's hash label", oursWithHash, false},
		{"hash label without the annotation", noAnnotation, false},
		{"annotation without the hash label", noLabel, false},
		{"annotation not true", falseAnnotation, false},
		{"a VM network", vmNetwork, false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := HarvesterMigrationNAD(tc.nad); got != tc.want {
				t.Errorf("HarvesterMigrationNAD = %v, want %v", got, tc.want)
			}
		})
	}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// netipEq compares netip values (unexported fields) by ==.
var netipEq = cmpopts.EquateComparable(netip.Prefix{})

func TestNetworkFromNAD(t *testing.T) {
	ipam := func(rest string) string {
		return `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,"ipam":` + rest + `}`
	}
	tests := []struct {
		name   string
		config string
		want   Network
		errs   []wantErr
		nj     string // the field a NotJudgedError names
	}{
		{name: "Harvester's", config: harvesterConfig,
			want: Network{ClusterNetwork: "mgmt", VLAN: 100, Range: pfx("10.52.0.0/24"), Exclude: Excludes{pfx("10.52.0.1/32")}}},
		{name: "Harvester's with the uplink MTU the network controller added", config: harvesterConfigMTU,
			want: Network{ClusterNetwork: "mgmt", VLAN: 100, Range: pfx("10.52.0.0/24"), Exclude: Excludes{pfx("10.52.0.1/32")}, MTU: 9000}},
		{name: "Harvester's VLAN 1 (a value's 0) read as written",
			config: `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":1,` +
				`"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			want: Network{ClusterNetwork: "migration", VLAN: 1, Range: pfx("10.52.0.0/24")}},
		{name: "no vlan, no exclude", config: `{"type":"bridge","bridge":"migration-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			want: Network{ClusterNetwork: "migration", Range: pfx("10.52.0.0/24")}},
		{name: "IPv6, excludes put in canonical order and spelling",
			config: ipam(`{"type":"whereabouts","range":"FD00:100::/64","exclude":["fd00:100::ffff/128","fd00:100::/120"]}`),
			want:   Network{ClusterNetwork: "migration", VLAN: 100, Range: pfx("fd00:100::/64"), Exclude: Excludes{pfx("fd00:100::/120"), pfx("fd00:100::ffff/128")}}},
		{name: "exclude with host bits masked (Harvester accepts it, whereabouts reads the block)",
			config: ipam(`{"type":"whereabouts","range":"10.52.0.0/24","exclude":["10.52.0.5/30"]}`),
			want:   Network{ClusterNetwork: "migration", VLAN: 100, Range: pfx("10.52.0.0/24"), Exclude: Excludes{pfx("10.52.0.4/30")}}},
		{name: "other keys not read", config: `{"cniVersion":"1.0.0","name":"x","type":"bridge","bridge":"migration-br","isGateway":false,` +
			`"ipam":{"type":"whereabouts","range":"10.52.0.0/24","network_name":"m"}}`,
			want: Network{ClusterNetwork: "migration", Range: pfx("10.52.0.0/24")}},

		// macvlan, as OpenShift Virtualization documents its migration network
		{name: "macvlan, OpenShift's example", config: `{"cniVersion":"0.3.1","name":"my-network","type":"macvlan","mode":"bridge",` +
			`"master":"eth1","ipam":{"type":"whereabouts","range":"10.200.5.0/24"}}`,
			want: Network{Range: pfx("10.200.5.0/24"), Macvlan: &Macvlan{Master: "eth1", Mode: "bridge"}}},
		{name: "macvlan without mode is bridge; mtu and excludes read", config: `{"type":"macvlan","master":"ens5.100","mtu":9000,` +
			`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.9","192.168.100.0/30"]}}`,
			want: Network{Range: pfx("192.168.100.0/24"), Exclude: Excludes{pfx("192.168.100.0/30"), pfx("192.168.100.9/32")}, MTU: 9000,
				Macvlan: &Macvlan{Master: "ens5.100", Mode: "bridge"}}},
		{name: "macvlan private", config: `{"type":"macvlan","master":"bond0","mode":"private","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			want: Network{Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "bond0", Mode: "private"}}},
		{name: "macvlan vepa; the bridge plugin's keys are not read", config: `{"type":"macvlan","master":"bond0","mode":"vepa",` +
			`"vlan":100,"bridge":7,"ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			want: Network{Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "bond0", Mode: "vepa"}}},
		{name: "macvlan passthru: not judged", config: `{"type":"macvlan","master":"eth1","mode":"passthru","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			nj: "spec.config.mode"},
		{name: "macvlan without master: not judged (each node's default route)", config: `{"type":"macvlan","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			nj: "spec.config.master"},
		{name: "macvlan with an empty master: not judged", config: `{"type":"macvlan","master":"","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			nj: "spec.config.master"},
		{name: "macvlan master in the pod: not judged", config: `{"type":"macvlan","master":"eth1","linkInContainer":true,"ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			nj: "spec.config.linkInContainer"},
		{name: "macvlan with host-local IPAM: not judged", config: `{"type":"macvlan","master":"eth1","ipam":{"type":"host-local","subnet":"10.0.0.0/24"}}`,
			nj: "spec.config.ipam.type"},
		{name: "macvlan without IPAM: no address", config: `{"type":"macvlan","master":"eth1"}`,
			errs: []wantErr{req("spec.config.ipam", "whereabouts")}},
		{name: "macvlan master not an interface name", config: `{"type":"macvlan","master":"eth1/x","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.master", "eth1/x", "'/'")}},
		{name: "macvlan master too long", config: `{"type":"macvlan","master":"enp0s31f6.10000x","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.master", "16 bytes")}},
		{name: "macvlan master not a string", config: `{"type":"macvlan","master":5,"ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			errs: []wantErr{typ("spec.config.master", "JSON string")}},
		{name: "macvlan unknown mode", config: `{"type":"macvlan","master":"eth1","mode":"source","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			errs: []wantErr{{field.ErrorTypeNotSupported, "spec.config.mode", []string{"not a macvlan mode"}}}},
		{name: "macvlan mtu too large", config: `{"type":"macvlan","master":"eth1","mtu":65000,"ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.mtu", "9216")}},
		{name: "macvlan range broken", config: `{"type":"macvlan","master":"eth1","ipam":{"type":"whereabouts","range":"10.0.0.7/24"}}`,
			errs: []wantErr{inv("spec.config.ipam.range", "host bits")}},

		{name: "empty", config: "", errs: []wantErr{req("spec.config", "no CNI configuration")}},
		{name: "not an object", config: `["bridge"]`, errs: []wantErr{inv("spec.config", "JSON object")}},
		{name: "malformed JSON", config: `{"type":"bridge",`, errs: []wantErr{inv("spec.config", "not valid JSON")}},
		{name: "trailing data", config: harvesterConfig + `{}`, errs: []wantErr{inv("spec.config", "after the JSON object")}},
		{name: "duplicate key", config: `{"type":"bridge","bridge":"a-br","bridge":"b-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{dup("spec.config.bridge", "appears a second time")}},
		{name: "missing ipam", config: `{"type":"bridge","bridge":"migration-br","vlan":100}`,
			errs: []wantErr{req("spec.config.ipam", "whereabouts")}},
		{name: "ipam not an object", config: `{"type":"bridge","bridge":"migration-br","ipam":"whereabouts"}`,
			errs: []wantErr{typ("spec.config.ipam", "JSON object", "a string")}},
		{name: "non-whereabouts ipam: not judged", config: ipam(`{"type":"host-local","subnet":"10.52.0.0/24"}`),
			nj: "spec.config.ipam.type"},
		{name: "ipam without type", config: ipam(`{"range":"10.52.0.0/24"}`),
			errs: []wantErr{req("spec.config.ipam.type", "whereabouts")}},
		{name: "another plugin type: not judged", config: `{"type":"ipvlan","master":"eth1","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			nj: "spec.config.type"},
		{name: "a plugin list: not judged", config: `{"cniVersion":"0.3.1","name":"m","plugins":[` + harvesterConfig + `]}`,
			nj: "spec.config.plugins"},
		{name: "a plugin list whose first member would read: still not judged",
			config: `{"type":"bridge","bridge":"migration-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"},"plugins":[{"type":"tuning"}]}`,
			nj:     "spec.config.plugins"},
		{name: "the former cnv-bridge name: not judged (not read as bridge)",
			config: `{"type":"cnv-bridge","bridge":"migration-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			nj:     "spec.config.type"},
		{name: "no type", config: `{"bridge":"migration-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{req("spec.config.type", "bridge")}},
		{name: "bridge without -br (an nmstate bridge): not judged", config: `{"type":"bridge","bridge":"br0","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			nj: "spec.config.bridge"},
		{name: "bridge -br alone", config: `{"type":"bridge","bridge":"-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.bridge", "<clusterNetwork>-br")}},
		{name: "bridge naming an invalid cluster network", config: `{"type":"bridge","bridge":"Mig_1-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.bridge", "Mig_1-br", `names cluster network "Mig_1"`)}},
		{name: "bridge not a string", config: `{"type":"bridge","bridge":7,"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{typ("spec.config.bridge", "JSON string")}},
		{name: "vlan a string", config: `{"type":"bridge","bridge":"migration-br","vlan":"100","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{typ("spec.config.vlan", "drop the quotes")}},
		{name: "vlan out of range", config: `{"type":"bridge","bridge":"migration-br","vlan":4095,"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.vlan", "4094")}},
		{name: "mtu too small", config: `{"type":"bridge","bridge":"migration-br","mtu":100,"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.mtu", "576")}},
		{name: "exclude outside range", config: ipam(`{"type":"whereabouts","range":"10.52.0.0/24","exclude":["10.53.0.1/32"]}`),
			errs: []wantErr{inv("spec.config.ipam.exclude[0]", "outside range 10.52.0.0/24")}},
		{name: "exclude not a CIDR", config: ipam(`{"type":"whereabouts","range":"10.52.0.0/24","exclude":["ten"]}`),
			errs: []wantErr{inv("spec.config.ipam.exclude[0]", "not a valid CIDR")}},
		{name: "exclude not a string", config: ipam(`{"type":"whereabouts","range":"10.52.0.0/24","exclude":[5]}`),
			errs: []wantErr{typ("spec.config.ipam.exclude[0]", "JSON string")}},
		{name: "range not a network address (strict, as Harvester's webhook)", config: ipam(`{"type":"whereabouts","range":"10.52.0.7/24"}`),
			errs: []wantErr{inv("spec.config.ipam.range", "host bits", `"10.52.0.0/24"`)}},
		{name: "range as a start-end span", config: ipam(`{"type":"whereabouts","range":"10.52.0.10-10.52.0.20/24"}`),
			errs: []wantErr{inv("spec.config.ipam.range", "not a valid CIDR")}},
		{name: "missing range", config: ipam(`{"type":"whereabouts"}`), errs: []wantErr{req("spec.config.ipam.range")}},
		{name: "range_start", config: ipam(`{"type":"whereabouts","range":"10.52.0.0/24","range_start":"10.52.0.10"}`),
			errs: []wantErr{{field.ErrorTypeForbidden, "spec.config.ipam.range_start", []string{"only \"range\" and \"exclude\""}}}},
		{name: "mgmt untagged", config: `{"type":"bridge","bridge":"mgmt-br","ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
			errs: []wantErr{inv("spec.config.vlan", "mgmt")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, nj, errs := networkFromConfig(tc.config, field.NewPath("spec", "config"))
			checkErrs(t, errs, tc.errs)
			if d := gocmp.Diff(tc.want, got, netipEq); d != "" {
				t.Errorf("Network (-want +got):\n%s", d)
			}
			if gotNJ := njField(nj); gotNJ != tc.nj {
				t.Errorf("not judged on %q (%v), want %q", gotNJ, nj, tc.nj)
			}
			n, err := NetworkFromNAD(harvesterNAD(tc.config))
			if _, isNJ := IsNotJudged(err); isNJ != (tc.nj != "") {
				t.Errorf("NetworkFromNAD error %v: not judged %v, want %v", err, isNJ, tc.nj != "")
			}
			if (err != nil) != (len(tc.errs) > 0 || tc.nj != "") {
				t.Fatalf("NetworkFromNAD error %v, want errors %v", err, tc.errs)
			}
			if err != nil && !strings.Contains(err.Error(), "harvester-system/vm-migration-network-x7k2q") {
				t.Errorf("error %q does not name the NAD", err)
			}
			if d := gocmp.Diff(tc.want, n, netipEq); d != "" {
				t.Errorf("NetworkFromNAD (-want +got):\n%s", d)
			}
		})
	}
	if _, err := NetworkFromNAD(nil); err == nil {
		t.Error("NetworkFromNAD(nil) gave no error")
	}
}

// roundTripValues are valid values, parsed with settings' own parser, whose rendered NAD must read
// back to the same Network.
var roundTripValues = []string{
	validValue,
	`{"clusterNetwork":"migration","range":"192.168.100.0/24"}`,
	`{"clusterNetwork":"mgmt","vlan":2,"range":"10.52.0.0/16","exclude":["10.52.255.0/24","10.52.0.1","10.52.0.16/28"],"mtu":1500}`,
	`{"clusterNetwork":"mig","range":"FD00:100::/64","exclude":["fd00:100::ffff","fd00:100::/120"],"mtu":9216}`,
	`{"clusterNetwork":"abcdefghijkl","vlan":4094,"range":"172.16.0.0/30","mtu":576}`,
	`{"clusterNetwork":"m","vlan":1,"range":"2001:db8:1::/126","mtu":1280}`,
}

// macvlanRoundTripValues are valid macvlan values; Harvester's value cannot say them.
var macvlanRoundTripValues = []string{
	`{"macvlan":{"master":"ens5"},"range":"192.168.100.0/24","mtu":9000}`,
	`{"macvlan":{"master":"ens5.100","mode":"private"},"range":"10.52.0.0/16","exclude":["10.52.255.0/24","10.52.0.1"]}`,
	`{"macvlan":{"master":"bond0","mode":"vepa"},"range":"FD00:100::/64","mtu":1280}`,
}

// TestNetworkFromNADRoundTrip: NetworkFromNAD(RenderNAD(n)) == n for every valid n (a macvlan
// value with a cluster network reads back without it: a NAD does not say which nodes).
func TestNetworkFromNADRoundTrip(t *testing.T) {
	for _, raw := range append(append([]string{`{"macvlan":{"master":"ens5"},"clusterNetwork":"x","range":"192.168.100.0/24"}`},
		roundTripValues...), macvlanRoundTripValues...) {
		n := mustNetwork(t, raw)
		got, err := NetworkFromNAD(RenderNAD(EffectiveOf(n), "kubevirt"))
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		want := *n
		if want.Macvlan != nil {
			want.ClusterNetwork = ""
		}
		if d := gocmp.Diff(want, got, netipEq); d != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", raw, d)
		}
	}
}

// FuzzNetworkFromNAD: reading never panics; what reads is a valid value (its canonical form
// re-parses with settings' parser to the same Network) and reads back the same once rendered.
func FuzzNetworkFromNAD(f *testing.F) {
	for _, s := range []string{harvesterConfig, harvesterConfigMTU, "", "{}", `{"ipam":null}`, `{"ipam":{"exclude":[null]}}`,
		`{"type":"bridge","bridge":"-br","ipam":{"type":"whereabouts","range":"::/0","exclude":["::1"]}}`,
		// each breaks one of the value's checks: reading must refuse it as settings' parser does
		`{"type":"bridge","bridge":"migration-br","mtu":100,"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
		`{"type":"bridge","bridge":"migration-br","vlan":5000,"ipam":{"type":"whereabouts","range":"10.52.0.0/24"}}`,
		`{"type":"bridge","bridge":"migration-br","ipam":{"type":"whereabouts","range":"127.0.0.0/24"}}`,
		`{"type":"bridge","bridge":"migration-br","ipam":{"type":"whereabouts","range":"10.52.0.0/30","exclude":["10.52.0.1","10.52.0.2"]}}`} {
		f.Add(s)
	}
	for _, raw := range append(append([]string(nil), roundTripValues...), macvlanRoundTripValues...) {
		f.Add(NADConfig(mustNetwork(f, raw)))
	}
	for _, s := range []string{`{"type":"macvlan","master":"eth1","mode":"passthru","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
		`{"type":"macvlan","master":"e\u0000","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
		`{"type":"macvlan","master":"..","vlan":9,"ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`,
		`{"plugins":[],"type":"macvlan"}`, `{"type":"macvlan","linkInContainer":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, config string) {
		nad := harvesterNAD(config)
		n, err := NetworkFromNAD(nad)
		if nj, ok := IsNotJudged(err); ok && (nj.NAD == "" || nj.Reason == "" || !strings.HasPrefix(nj.Field, "spec.config")) {
			t.Fatalf("%q: not judged without its NAD, field or reason: %+v", config, nj)
		}
		if err != nil {
			return
		}
		canon := string(n.Canonical())
		p, errs, _ := ParseNetwork(canon, field.NewPath("value"))
		if len(errs) > 0 || p == nil {
			t.Fatalf("%q read to %s, which settings refuses: %v", config, canon, errs)
		}
		if d := gocmp.Diff(n, *p, netipEq); d != "" {
			t.Fatalf("%q: read and parsed differ (-read +parsed):\n%s", config, d)
		}
		again, err := NetworkFromNAD(harvesterNAD(NADConfig(&n)))
		if err != nil || gocmp.Diff(n, again, netipEq) != "" {
			t.Fatalf("%q: rendered %s reads back as %+v, %v", config, NADConfig(&n), again, err)
		}
		_ = HarvesterValue(n)
	})
}

func TestHarvesterValue(t *testing.T) {
	n := mustNetwork(t, `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.9","192.168.100.0/30"],"mtu":9000}`)
	want := `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.0/30","192.168.100.9/32"]}`
	if got := HarvesterValue(*n); got != want {
		t.Errorf("HarvesterValue =\n %s\nwant\n %s", got, want)
	}
	if got, want := HarvesterValue(Network{ClusterNetwork: "m", Range: pfx("10.0.0.0/24")}),
		`{"clusterNetwork":"m","vlan":0,"range":"10.0.0.0/24"}`; got != want {
		t.Errorf("HarvesterValue = %s, want %s", got, want)
	}
	if got := HarvesterValue(*mustNetwork(t, macvlanValue)); got != "" {
		t.Errorf("HarvesterValue of a macvlan network = %s, want none", got)
	}
	// Round trip through settings' own parser: the same network but for the MTU Harvester has not.
	for _, raw := range roundTripValues {
		n := mustNetwork(t, raw)
		back := mustNetwork(t, HarvesterValue(*n))
		want := *n
		want.MTU = 0
		if d := gocmp.Diff(want, *back, netipEq); d != "" {
			t.Errorf("%s: HarvesterValue round trip (-want +got):\n%s", raw, d)
		}
	}
}

// njField is the field a NotJudgedError names, "" for none.
func njField(nj *NotJudgedError) string {
	if nj == nil {
		return ""
	}
	return nj.Field
}
