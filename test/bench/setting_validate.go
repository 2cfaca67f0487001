package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings"
)

// svExcludes is the number of exclude entries of the setting-validate cases.
const svExcludes = 1000

// svGoalNs is the per-validation goal: 1 ms.
const svGoalNs = 1e6

// settingValidate measures settings.ValidateMigrationNetwork against a 3-node cluster on an IPv4
// /16 and an IPv6 /64, each with 1,000 valid excludes (non-overlapping, inside the range, shuffled),
// and compares the IPv4 case with a naive counter that enumerates every address and tests each
// exclude in turn: the approach the validator must never take.
func settingValidate() ([]string, error) {
	cl := svCluster("migration", 3)
	v4 := &settings.MigrationNetwork{ClusterNetwork: "migration", VLAN: 100, Range: "10.20.0.0/16",
		Exclude: svExcludesV4(netip.MustParsePrefix("10.20.0.0/16")), MTU: 9000}
	v6 := &settings.MigrationNetwork{ClusterNetwork: "migration", VLAN: 100, Range: "fd00:20::/64",
		Exclude: svExcludesV6(netip.MustParsePrefix("fd00:20::/64")), MTU: 9000}

	fld := field.NewPath("value")
	for _, m := range []*settings.MigrationNetwork{v4, v6} {
		if errs, warns := settings.ValidateMigrationNetwork(m, cl, fld); len(errs) > 0 || len(warns) > 0 {
			return nil, fmt.Errorf("benchmark value %s is not cleanly valid: %v %v", m.Range, errs.ToAggregate(), warns)
		}
	}
	want, err := svTypedUsable(v4)
	if err != nil {
		return nil, err
	}
	if got := svNaiveUsable(v4); got.Cmp(want) != 0 {
		return nil, fmt.Errorf("naive counter found %s usable addresses, arithmetic %s", got, want)
	}

	var benchErr error
	validate := func(m *settings.MigrationNetwork) testing.BenchmarkResult {
		return testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if errs, _ := settings.ValidateMigrationNetwork(m, cl, fld); len(errs) > 0 {
					benchErr = fmt.Errorf("validation of %s failed during the benchmark: %v", m.Range, errs.ToAggregate())
				}
			}
		})
	}
	r4 := validate(v4)
	r6 := validate(v6)
	naive := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if svNaiveUsable(v4).Cmp(want) != 0 {
				benchErr = fmt.Errorf("naive counter disagrees")
			}
		}
	})
	if benchErr != nil {
		return nil, benchErr
	}
	if r4.N == 0 || r6.N == 0 || naive.N == 0 {
		return nil, fmt.Errorf("a benchmark did not run (N = %d, %d, %d)", r4.N, r6.N, naive.N)
	}
	ns4, ns6, nsNaive := svPerOp(r4), svPerOp(r6), svPerOp(naive)
	return []string{
		fmt.Sprintf("bench setting-validate: ipv4 /16 + %d excludes: %s/op, %s/op %s; naive enumerating counter: %s/op; ratio %.1fx faster",
			svExcludes, svFmtNs(ns4), svFmtBytes(r4.AllocedBytesPerOp()), svGoal(ns4), svFmtNs(nsNaive), nsNaive/ns4),
		fmt.Sprintf("bench setting-validate: ipv6 /64 + %d excludes: %s/op, %s/op, %d allocs/op %s (usable addresses: %s)",
			svExcludes, svFmtNs(ns6), svFmtBytes(r6.AllocedBytesPerOp()), r6.AllocsPerOp(), svGoal(ns6), svUsable(v6)),
	}, nil
}

// svCluster is n nodes attached to cluster network cn.
func svCluster(cn string, n int) *settings.Cluster {
	cl := &settings.Cluster{}
	for i := range n {
		cl.Nodes = append(cl.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("node-%d", i),
			Labels: map[string]string{settings.ClusterNetworkLabelPrefix + cn: "true"},
		}})
	}
	return cl
}

// svExcludesV4 places exclude i in the i-th 64-address slot of rng (a /16 holds 1,024 slots):
// a bare IP, a /30 or a /28, so entries never overlap; the order is shuffled deterministically.
func svExcludesV4(rng netip.Prefix) []string {
	base := rng.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	out := make([]string, svExcludes)
	for i := range svExcludes {
		slot := start + uint32(i)*64
		switch i % 3 {
		case 0:
			out[i] = svAddr4(slot + 1).String()
		case 1:
			out[i] = netip.PrefixFrom(svAddr4(slot+4), 30).String()
		default:
			out[i] = netip.PrefixFrom(svAddr4(slot+16), 28).String()
		}
	}
	svShuffle(out)
	return out
}

func svAddr4(u uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
}

// svExcludesV6 places exclude i in the i-th 2^32-address slot of a /64: a /96, a /112 or a bare IP.
func svExcludesV6(rng netip.Prefix) []string {
	out := make([]string, svExcludes)
	for i := range svExcludes {
		b := rng.Addr().As16()
		b[10], b[11] = byte(i>>8), byte(i)
		switch i % 3 {
		case 0:
			out[i] = netip.PrefixFrom(netip.AddrFrom16(b), 96).String()
		case 1:
			b[13] = 7
			out[i] = netip.PrefixFrom(netip.AddrFrom16(b), 112).String()
		default:
			b[15] = 9
			out[i] = netip.AddrFrom16(b).String()
		}
	}
	svShuffle(out)
	return out
}

func svShuffle(s []string) {
	r := rand.New(rand.NewPCG(42, 1))
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}

// svNaiveUsable counts usable addresses by visiting every address of the range and testing every
// exclude: O(range size × excludes). Only for comparison; never use this in validation.
func svNaiveUsable(m *settings.MigrationNetwork) *big.Int {
	rng := netip.MustParsePrefix(m.Range)
	excl := make([]netip.Prefix, 0, len(m.Exclude))
	for _, s := range m.Exclude {
		if p, err := netip.ParsePrefix(s); err == nil {
			excl = append(excl, p)
			continue
		}
		a := netip.MustParseAddr(s)
		excl = append(excl, netip.PrefixFrom(a, a.BitLen()))
	}
	first := rng.Addr()
	var last netip.Addr
	count := int64(0)
	for a := first; a.IsValid() && rng.Contains(a); a = a.Next() {
		last = a
		excluded := false
		for _, e := range excl {
			if e.Contains(a) {
				excluded = true
				break
			}
		}
		if !excluded {
			count++
		}
	}
	// The first and last address are never assigned; take them off unless an exclude already did.
	for _, edge := range []netip.Addr{first, last} {
		inExclude := false
		for _, e := range excl {
			inExclude = inExclude || e.Contains(edge)
		}
		if !inExclude {
			count--
		}
	}
	return big.NewInt(count)
}

func svUsable(m *settings.MigrationNetwork) string {
	n, err := svTypedUsable(m)
	if err != nil {
		return "error: " + err.Error()
	}
	return n.String()
}

// svTypedUsable counts m's usable addresses on its typed value, as the network controller does.
func svTypedUsable(m *settings.MigrationNetwork) (*big.Int, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	n, errs, _ := settings.ParseNetwork(string(raw), field.NewPath("value"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return n.Usable(), nil
}

func svPerOp(r testing.BenchmarkResult) float64 { return float64(r.T.Nanoseconds()) / float64(r.N) }

func svGoal(ns float64) string {
	if ns <= svGoalNs {
		return "(goal ≤ 1 ms: ok)"
	}
	return "(goal ≤ 1 ms: MISSED)"
}

func svFmtNs(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
	return fmt.Sprintf("%.1f ms", ns/1e6)
}

func svFmtBytes(b int64) string {
	if b < 1024 {
		return fmt.Sprintf("%d B", b)
	}
	return fmt.Sprintf("%.0f KiB", float64(b)/1024)
}
