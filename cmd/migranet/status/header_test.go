package status

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

const netValue = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`

// nadOf is the NAD value renders to, computed outside migranet:
// printf '%s' "$netValue" | sha256sum (netValue is already canonical) → d37a915f82...
func nadOf(t *testing.T, value string) string {
	t.Helper()
	if value != netValue {
		t.Fatalf("no independently computed NAD name for %s", value)
	}
	return "vm-migration-network-d37a915f82"
}

type settingOpt func(*v1beta1.Setting)

func newSetting(value string, opts ...settingOpt) *v1beta1.Setting {
	s := &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork, Generation: 2}, Value: value}
	for _, o := range opts {
		o(s)
	}
	return s
}

func cond(typ string, status metav1.ConditionStatus, reason, message string) settingOpt {
	return func(s *v1beta1.Setting) {
		s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message})
	}
}

func applied(nad string) settingOpt {
	return func(s *v1beta1.Setting) { s.Status.AppliedNetwork = nad }
}

func nodes(attached, eligible int) settingOpt {
	return func(s *v1beta1.Setting) {
		for i := range eligible {
			n := v1beta1.NodeMigrationStatus{Name: "node-" + string(rune('1'+i))}
			if i < attached {
				n.IP = "192.168.100." + string(rune('2'+i))
			} else {
				n.Reason = "NotRolled"
			}
			s.Status.Nodes = append(s.Status.Nodes, n)
		}
	}
}

func paths(p v1beta1.PathsStatus) settingOpt {
	return func(s *v1beta1.Setting) { s.Status.Paths = &p }
}

// failingPaths is status.paths with node-1's paths failing towards both peers (MTU), one of them
// both ways: seven directions would be listed, cut here to six to see the table's limit.
func failingPaths() v1beta1.PathsStatus {
	p := v1beta1.PathsStatus{Pairs: 3, Verified: 1, Failing: 2, Summary: "1/3 verified, 2 failing"}
	for i, d := range [][2]string{{"node-1", "node-2"}, {"node-1", "node-3"}, {"node-2", "node-1"}, {"node-3", "node-1"}, {"node-1", "node-2"}, {"node-1", "node-3"}} {
		reason := v1beta1.PathMTU
		if i >= 4 {
			reason = v1beta1.PathOneWay
		}
		p.Failures = append(p.Failures, v1beta1.PathFailure{From: d[0], To: d[1], Reason: reason,
			Message: "9000-byte frames from " + d[0] + " to " + d[1] + " do not arrive (largest that crossed: 1500); check the uplink MTU"})
	}
	return p
}

func capacity(used, usable int64) settingOpt {
	return func(s *v1beta1.Setting) {
		s.Status.Capacity = &v1beta1.IPCapacity{Used: v1beta1.Count(strconv.FormatInt(used, 10)),
			Usable: v1beta1.Count(strconv.FormatInt(usable, 10)), Free: v1beta1.Count(strconv.FormatInt(usable-used, 10))}
	}
}

func TestHeader(t *testing.T) {
	nad := nadOf(t, netValue)
	tests := []struct {
		name    string
		net     Network
		want    []string // substrings of the line, checked apart from the golden file
		mode    string
		ready   string
		unknown bool
	}{
		{name: "pod-network", net: Header(newSetting("", cond(v1beta1.ConditionReady, metav1.ConditionTrue, "PodNetwork", "no migration network configured"))),
			want: []string{"Migration network: none (pod network): Ready"}, mode: ModePod, ready: "True"},
		{name: "pod-network-default", net: Header(func() *v1beta1.Setting {
			s := newSetting(" ", cond(v1beta1.ConditionReady, metav1.ConditionFalse, "KubeVirtNotReady", "KubeVirt is not ready: Available=False"))
			s.Default = ""
			return s
		}()), want: []string{"none (pod network): NotReady (KubeVirtNotReady: KubeVirt is not ready: Available=False)"}, mode: ModePod, ready: "False"},
		{name: "ready", net: Header(newSetting(netValue, applied(nad), nodes(3, 3), capacity(3, 253),
			cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", "all 3 eligible virt-handlers are on the migration network"))),
			want: []string{nad + " (migration vlan 100 192.168.100.0/24 (-1) mtu 9000): Ready, nodes 3/3 attached, IPs 3/253 used"},
			mode: ModeMigration, ready: "True"},
		{name: "not-exclusive", net: Header(newSetting(netValue, applied(nad), nodes(3, 3), capacity(3, 253),
			cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", "all 3 eligible virt-handlers are on the migration network"),
			cond(v1beta1.ConditionExclusive, metav1.ConditionFalse, "OtherWorkloadsAttached", "1 pods and 0 VMIs besides virt-handlers attach the migration network kubevirt/"+nad+": t/web-0"))),
			want: []string{"IPs 3/253 used; NOT EXCLUSIVE: 1 pods and 0 VMIs besides virt-handlers attach the migration network kubevirt/" + nad + ": t/web-0"},
			mode: ModeMigration, ready: "True"},
		{name: "from-default", net: Header(func() *v1beta1.Setting {
			s := newSetting("", applied(nad), nodes(2, 2), cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", ""))
			s.Default = netValue
			return s
		}()), want: []string{nad + " (migration", "Ready, nodes 2/2 attached"}, mode: ModeMigration, ready: "True"},
		{name: "nodes-not-attached", net: Header(newSetting(netValue, applied(nad), nodes(1, 3), capacity(1, 253),
			cond(v1beta1.ConditionReady, metav1.ConditionFalse, "NodesNotAttached", "1 of 3 virt-handlers are on the migration network "+nad))),
			want: []string{"NotReady (NodesNotAttached: 1 of 3 virt-handlers", "nodes 1/3 attached", "IPs 1/253 used"}, mode: ModeMigration, ready: "False"},
		{name: "not-applied", net: Header(newSetting(netValue, applied("vm-migration-network-0000000000"),
			cond(v1beta1.ConditionConfigured, metav1.ConditionFalse, "KubeVirtNotFound", "no KubeVirt CR in namespace kubevirt"),
			cond(v1beta1.ConditionReady, metav1.ConditionFalse, "NotApplied", "the settings controller has not applied the current value yet"))),
			want: []string{", not applied yet: NotReady (NotApplied: ", "; Configured=False KubeVirtNotFound: no KubeVirt CR", "nodes 0/0 attached"},
			mode: ModeMigration, ready: "False"},
		{name: "no-status", net: Header(newSetting(netValue)),
			want: []string{"not applied yet: Unknown (NoStatus: no Ready condition yet: is the migranet manager running?)"}, mode: ModeMigration, ready: "Unknown"},
		{name: "invalid-value", net: Header(newSetting(`{"vlan":`, cond(v1beta1.ConditionReady, metav1.ConditionFalse, "InvalidValue", "the setting's value does not parse"))),
			want: []string{"Migration network: unknown (invalid value): NotReady (InvalidValue: "}, mode: ModeUnknown, ready: "False"},
		{name: "paths-healthy", net: Header(newSetting(netValue, applied(nad), nodes(3, 3), capacity(3, 253),
			cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", ""),
			cond(v1beta1.ConditionHealthy, metav1.ConditionTrue, "AllPathsVerified", "every pair of attached nodes has a verified migration path"),
			paths(v1beta1.PathsStatus{Pairs: 3, Verified: 3, Summary: "3/3 verified"}))),
			want: []string{"IPs 3/253 used, paths 3/3 verified"}, mode: ModeMigration, ready: "True"},
		{name: "paths-failing", net: Header(newSetting(netValue, applied(nad), nodes(3, 3), capacity(3, 253),
			cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", ""),
			cond(v1beta1.ConditionHealthy, metav1.ConditionFalse, "PathsFailing", "migration paths fail between attached nodes, most from or to node-1"),
			paths(failingPaths()))),
			want: []string{"Ready, nodes 3/3 attached, IPs 3/253 used, paths 1/3 verified, 2 failing (PathsFailing)"}, mode: ModeMigration, ready: "True"},
		{name: "paths-not-probed", net: Header(newSetting(netValue, applied(nad), nodes(2, 2),
			cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", ""),
			cond(v1beta1.ConditionHealthy, metav1.ConditionUnknown, "NotProbed", "no attached node has fresh probe results"),
			paths(v1beta1.PathsStatus{Pairs: 1, Unverified: 1, Summary: "0/1 verified"}))),
			want: []string{"paths 0/1 verified (NotProbed)"}, mode: ModeMigration, ready: "True"},
		{name: "harvester-mode", net: Header(func() *v1beta1.Setting {
			// Harvester mode: the value stays empty, status.source carries Harvester's network.
			s := newSetting("", applied("vm-migration-network-abcde"), nodes(3, 3), capacity(3, 253),
				cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", ""))
			s.Status.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHarvester, Setting: "settings.harvesterhci.io/vm-migration-network",
				NetworkAttachmentDefinition: "harvester-system/vm-migration-network-abcde", Value: netValue}
			return s
		}()), want: []string{"Migration network (Harvester mode, decided by settings.harvesterhci.io/vm-migration-network): vm-migration-network-abcde (migration vlan 100 192.168.100.0/24 (-1) mtu 9000): Ready, nodes 3/3"},
			mode: ModeMigration, ready: "True"},
		{name: "hco-mode", net: Header(func() *v1beta1.Setting {
			// HCO mode while the HyperConverged CR decides: a value of migranet's own is kept but
			// not in force (the near miss: naming the value's NAD instead of the source's).
			s := newSetting(`{"clusterNetwork":"migration","vlan":300,"range":"10.3.0.0/24"}`, applied("their-migration"), nodes(3, 3), capacity(3, 253),
				cond(v1beta1.ConditionReady, metav1.ConditionTrue, "AllNodesAttached", ""))
			s.Status.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHyperConverged, Setting: "hyperconvergeds.hco.kubevirt.io/openshift-cnv/kubevirt-hyperconverged",
				NetworkAttachmentDefinition: "openshift-cnv/their-migration", Value: netValue}
			return s
		}()), want: []string{"Migration network (HCO mode, decided by hyperconvergeds.hco.kubevirt.io/openshift-cnv/kubevirt-hyperconverged): their-migration (migration vlan 100 192.168.100.0/24"},
			mode: ModeMigration, ready: "True"},
		{name: "hco-mode-not-judged", net: Header(func() *v1beta1.Setting {
			// HCO mode, a plugin-list NAD chosen on the HyperConverged CR (issue 52, item 1): the
			// near miss is the header of the value's own network, which is no longer in force.
			s := newSetting(`{"clusterNetwork":"migration","vlan":300,"range":"10.3.0.0/24"}`, applied("chained"), nodes(3, 1),
				cond(v1beta1.ConditionReady, metav1.ConditionUnknown, "NetworkNotJudged", "KubeVirt migrates over NetworkAttachmentDefinition openshift-cnv/chained, which migranet does not judge"))
			s.Status.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHyperConverged, Setting: "hyperconvergeds.hco.kubevirt.io/openshift-cnv/kubevirt-hyperconverged",
				NetworkAttachmentDefinition: "openshift-cnv/chained", NotJudged: "spec.config.plugins"}
			return s
		}()), want: []string{"Migration network (HCO mode, decided by hyperconvergeds.hco.kubevirt.io/openshift-cnv/kubevirt-hyperconverged): chained (not judged by migranet): Unknown (NetworkNotJudged"},
			mode: ModeNotJudged, ready: "Unknown"},
		{name: "not-found", net: Header(nil), want: []string{"Migration network: unknown: Unknown (NotFound: setting vm-migration-network not found: is migranet installed?)"},
			mode: ModeUnknown, ready: "Unknown"},
		{name: "forbidden", net: Unavailable(ReasonForbidden, `settings.migranet.io "vm-migration-network" is forbidden: User "dev" cannot get resource "settings"`),
			want: []string{"unknown: Unknown (Forbidden: settings.migranet.io"}, mode: ModeUnknown, ready: "Unknown"},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen[tc.name] = true
			line := tc.net.String()
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("header lacks %q:\n%s", w, line)
				}
			}
			if strings.Contains(line, "\n") {
				t.Errorf("header spans lines: %q", line)
			}
			if tc.net.Mode != tc.mode || tc.net.Ready != tc.ready {
				t.Errorf("mode %q ready %q, want %q %q", tc.net.Mode, tc.net.Ready, tc.mode, tc.ready)
			}
			raw, err := json.MarshalIndent(tc.net, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "header-"+tc.name, line+"\n"+string(raw)+"\n")
		})
	}
	for name := range goldenNames(t, "header-") {
		if !seen[strings.TrimPrefix(name, "header-")] {
			t.Errorf("testdata/%s.golden has no case", name)
		}
	}
}
