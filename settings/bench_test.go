package settings

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// BenchmarkValidateMigrationNetwork validates an IPv4 /16 and an IPv6 /64 with 1,000 excludes
// each against 3 nodes (test/bench reports the same cases with a naive baseline).
func BenchmarkValidateMigrationNetwork(b *testing.B) {
	cl := &Cluster{Nodes: attached("n", "migration", 3)}
	v4 := &MigrationNetwork{ClusterNetwork: "migration", VLAN: 100, Range: "10.20.0.0/16"}
	v6 := &MigrationNetwork{ClusterNetwork: "migration", VLAN: 100, Range: "fd00:20::/64"}
	for i := range 1000 {
		v4.Exclude = append(v4.Exclude, fmt.Sprintf("10.20.%d.%d/30", i*64/256, i*64%256))
		v6.Exclude = append(v6.Exclude, fmt.Sprintf("fd00:20::%x:0:0/96", i))
	}
	for _, m := range []*MigrationNetwork{v4, v6} {
		b.Run(m.Range, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if errs, _ := ValidateMigrationNetwork(m, cl, field.NewPath("value")); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
