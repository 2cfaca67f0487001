package settings

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Seed inputs live in testdata/fuzz/<FuzzName>/ (the files `go test -fuzz` reads and writes).

// FuzzParseMigrationNetwork: parsing never panics; the typed value exists exactly when admission
// (ParseAndValidateMigrationNetwork without a cluster) finds no problem; its canonical form
// re-parses to a value with the same hash and canonical bytes; rendering it is deterministic.
func FuzzParseMigrationNetwork(f *testing.F) {
	f.Add(validValue)
	f.Fuzz(func(t *testing.T, raw string) {
		fld := field.NewPath("value")
		m, perrs := ParseMigrationNetwork(raw, fld)
		_, allErrs, _ := ParseAndValidateMigrationNetwork(raw, nil, fld)
		n, nerrs, _ := ParseNetwork(raw, fld)
		if m == nil && strings.TrimSpace(raw) != "" && len(perrs) == 0 {
			t.Fatalf("non-empty %q parsed to nil without error", raw)
		}
		if (n != nil) != (m != nil && len(allErrs) == 0) || dumpErrs(nerrs) != dumpErrs(allErrs) {
			t.Fatalf("%q: typed %v with %d errors, admission %d errors:\n%s", raw, n != nil, len(nerrs), len(allErrs), dumpErrs(allErrs))
		}
		if n == nil {
			return
		}
		canon := n.Canonical()
		n2, errs2, _ := ParseNetwork(string(canon), fld)
		if len(errs2) > 0 || n2 == nil {
			t.Fatalf("canonical %s of %q does not re-parse: %v", canon, raw, errs2)
		}
		if n2.Hash() != n.Hash() || string(n2.Canonical()) != string(canon) {
			t.Fatalf("canonical form unstable:\n %s\n %s", canon, n2.Canonical())
		}
		checkRender(t, n, n2)
		_ = n.Summary()
		_ = n.Usable()
	})
}

// FuzzValidateMigrationNetwork: validation of arbitrary field values against a generated cluster
// never panics; valid values stay valid once canonicalised, render deterministically, and have at
// least one usable address per eligible node.
func FuzzValidateMigrationNetwork(f *testing.F) {
	f.Add("migration", 100, "192.168.100.0/24", "192.168.100.1/32", 9000, uint8(3), uint8(0), "")
	f.Fuzz(func(t *testing.T, cn string, vlan int, rng, excl string, mtu int, nNodes, flags uint8, sel string) {
		m := &MigrationNetwork{ClusterNetwork: cn, VLAN: vlan, Range: rng, MTU: mtu}
		if excl != "" {
			m.Exclude = strings.Split(excl, ",")
		}
		cl := fuzzCluster(cn, int(nNodes%24), flags, sel)
		fld := field.NewPath("value")
		errs, _ := ValidateMigrationNetwork(m, cl, fld)
		if len(errs) > 0 {
			return
		}
		n := checkValue(m, fld).network()
		if n == nil {
			t.Fatalf("valid %+v has no typed value", m)
		}
		n2, perrs, _ := ParseNetwork(string(n.Canonical()), fld)
		if len(perrs) > 0 {
			t.Fatalf("canonical %s does not re-parse: %v", n.Canonical(), perrs)
		}
		if errs2 := EffectiveOf(n2).Validate(cl); len(errs2) > 0 {
			t.Fatalf("valid %+v, canonical %s invalid: %v", m, n.Canonical(), errs2)
		}
		usable := n.Usable()
		if usable.Sign() <= 0 || usable.Cmp(bigInt(len(cl.EligibleNodes()))) < 0 {
			t.Fatalf("valid value with %s usable addresses for %d nodes", usable, len(cl.EligibleNodes()))
		}
		checkRender(t, n, n2)
	})
}

// fuzzCluster builds n nodes: flags bit 0 makes node 0 a witness, bit 1 takes the cluster network
// off the last node, bit 2 applies sel=on as the node selector and labels odd nodes with it.
func fuzzCluster(cn string, n int, flags uint8, sel string) *Cluster {
	cl := &Cluster{}
	if flags&4 != 0 {
		cl.NodeSelector = map[string]string{"sel": sel}
	}
	for i := range n {
		nd := &corev1.Node{}
		nd.Name = fmt.Sprintf("node-%02d", i)
		nd.Labels = map[string]string{ClusterNetworkLabelPrefix + cn: "true"}
		if i == 0 && flags&1 != 0 {
			nd.Labels[WitnessLabel] = ""
		}
		if i == n-1 && flags&2 != 0 {
			delete(nd.Labels, ClusterNetworkLabelPrefix+cn)
		}
		if flags&4 != 0 && i%2 == 1 {
			nd.Labels["sel"] = sel
		}
		cl.Nodes = append(cl.Nodes, nd)
	}
	return cl
}

// checkRender renders two equivalent values and checks the NADs are identical and well formed.
func checkRender(t *testing.T, a, b *Network) {
	t.Helper()
	na, nb := RenderNAD(EffectiveOf(a), "kubevirt"), RenderNAD(EffectiveOf(b), "kubevirt")
	if na.Name != nb.Name || na.Spec.Config != nb.Spec.Config || na.Labels[LabelHash] != nb.Labels[LabelHash] {
		t.Fatalf("equivalent values render differently:\n%+v\n%+v", na, nb)
	}
	if len(na.Name) != len(NADNamePrefix)+NADHashChars || len(na.Labels[LabelHash]) != 63 {
		t.Fatalf("bad NAD name or hash label: %q %q", na.Name, na.Labels[LabelHash])
	}
	var cfg struct {
		Type   string `json:"type"`
		Bridge string `json:"bridge"`
		Master string `json:"master"`
		Mode   string `json:"mode"`
		IPAM   struct {
			Range string `json:"range"`
		} `json:"ipam"`
	}
	if err := json.Unmarshal([]byte(na.Spec.Config), &cfg); err != nil {
		t.Fatalf("config is not JSON: %v\n%s", err, na.Spec.Config)
	}
	if a.Macvlan != nil { // the macvlan plugin's config: a master the kernel takes, a mode of the plugin
		if cfg.Type != "macvlan" || cfg.Bridge != "" || len(ValidateInterfaceName(cfg.Master, field.NewPath("m"))) > 0 ||
			!slices.Contains(MacvlanModes, cfg.Mode) || cfg.IPAM.Range == "" {
			t.Fatalf("config %s", na.Spec.Config)
		}
		return
	}
	if cfg.Type != "bridge" || cfg.Bridge != BridgeName(a.ClusterNetwork) || len(cfg.Bridge) > 15 || cfg.IPAM.Range == "" {
		t.Fatalf("config %s", na.Spec.Config)
	}
}

func bigInt(n int) *big.Int { return big.NewInt(int64(n)) }
