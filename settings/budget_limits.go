package settings

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt's defaults for what the KubeVirt CR's spec.configuration.migrations leaves unset
// (pkg/virt-config, v1.8 and v1.9): bandwidthPerMigration 0 (unlimited), 150 s of
// completionTimeoutPerGiB, 150 s of progressTimeout, 2 outbound migrations per node, 5 per cluster.
const (
	DefaultCompletionTimeoutPerGiB = 150
	DefaultProgressTimeout         = 150
	DefaultParallelOutboundPerNode = 2
	DefaultParallelPerCluster      = 5
	gib                            = int64(1) << 30
	wireOverheadPercent            = 7
	wireOverheadExplained          = "7 % for the Ethernet, IP, TCP and TLS headers around the memory at an MTU of 1500 (IPv6; less at larger MTUs)"
)

// MigrationLimits are the KubeVirt CR's limits a budget is judged against.
type MigrationLimits struct {
	// BandwidthPerMigration is bytes a second, 0 unlimited.
	BandwidthPerMigration   int64
	CompletionTimeoutPerGiB int64
	ProgressTimeout         int64
	ParallelOutboundPerNode int
	ParallelPerCluster      int
}

// MigrationLimitsOf reads kv's spec.configuration.migrations, KubeVirt's defaults for what is
// unset (and for a nil kv).
func MigrationLimitsOf(kv *kubevirtv1.KubeVirt) MigrationLimits {
	l := MigrationLimits{CompletionTimeoutPerGiB: DefaultCompletionTimeoutPerGiB, ProgressTimeout: DefaultProgressTimeout,
		ParallelOutboundPerNode: DefaultParallelOutboundPerNode, ParallelPerCluster: DefaultParallelPerCluster}
	if kv == nil || kv.Spec.Configuration.MigrationConfiguration == nil {
		return l
	}
	m := kv.Spec.Configuration.MigrationConfiguration
	if m.BandwidthPerMigration != nil && m.BandwidthPerMigration.Sign() > 0 {
		l.BandwidthPerMigration = m.BandwidthPerMigration.Value()
	}
	if m.CompletionTimeoutPerGiB != nil && *m.CompletionTimeoutPerGiB > 0 {
		l.CompletionTimeoutPerGiB = *m.CompletionTimeoutPerGiB
	}
	if m.ProgressTimeout != nil && *m.ProgressTimeout > 0 {
		l.ProgressTimeout = *m.ProgressTimeout
	}
	if m.ParallelOutboundMigrationsPerNode != nil && *m.ParallelOutboundMigrationsPerNode > 0 {
		l.ParallelOutboundPerNode = int(min(*m.ParallelOutboundMigrationsPerNode, MaxInboundMigrations))
	}
	if m.ParallelMigrationsPerCluster != nil && *m.ParallelMigrationsPerCluster > 0 {
		l.ParallelPerCluster = int(min(*m.ParallelMigrationsPerCluster, 1<<20))
	}
	return l
}

// Need is the budget one migration needs, bytes a second on the wire: bandwidthPerMigration plus
// the headers around it (wireOverheadPercent); with bandwidthPerMigration unlimited, the slowest
// rate at which a guest that dirties nothing still completes before KubeVirt's completion timeout
// (1 GiB per completionTimeoutPerGiB seconds), plus the headers.
func (l MigrationLimits) Need() int64 {
	return ceilDiv(l.payloadNeed()*(100+wireOverheadPercent), 100)
}

func (l MigrationLimits) payloadNeed() int64 {
	if l.BandwidthPerMigration > 0 {
		return l.BandwidthPerMigration
	}
	return ceilDiv(gib, max(l.CompletionTimeoutPerGiB, 1))
}

// InboundLimit is how many migrations may stream into a node of budget nb at once: its
// inboundMigrations when set, else DefaultInbound of its bandwidth.
func (l MigrationLimits) InboundLimit(nb NodeBudget) int {
	if nb.InboundMigrations > 0 {
		return nb.InboundMigrations
	}
	return l.DefaultInbound(nb.Bandwidth)
}

// DefaultInbound is the inbound limit of a node whose budget is bandwidth, when none is written:
// as many migrations as the budget gives Need each (bandwidth / Need, at least 1); with
// bandwidthPerMigration unlimited, at most KubeVirt's parallelOutboundMigrationsPerNode, the
// limit KubeVirt keeps on the other direction.
func (l MigrationLimits) DefaultInbound(bandwidth int64) int {
	n := int(min(bandwidth/max(l.Need(), 1), MaxInboundMigrations))
	if l.BandwidthPerMigration <= 0 {
		n = min(n, l.ParallelOutboundPerNode)
	}
	return max(n, 1)
}

// ValidateBudget judges b against the KubeVirt CR's limits l: a bandwidth (the budget's, or an
// override's) below what one migration needs (Need) is refused, on its field; an inbound limit that
// leaves each migration less than Need, or a bandwidth that KubeVirt's own outbound limit splits
// below Need, is a warning (prefixed with its field path).
func ValidateBudget(b *Budget, fld *field.Path, l MigrationLimits) (field.ErrorList, []string) {
	if b == nil {
		return nil, nil
	}
	var errs field.ErrorList
	var warns []string
	check := func(bw int64, inbound int, bwPath, inPath *field.Path, bwText string) {
		need := l.Need()
		if bwPath != nil && bw < need {
			errs = append(errs, field.Invalid(bwPath, bwText, fmt.Sprintf(
				"is below what one migration needs: %s; a single migration would then stream slower than KubeVirt is told, and "+
					"may hit its completion timeout (completionTimeoutPerGiB %d s per GiB); raise it to at least %s, or lower the "+
					"KubeVirt CR's spec.configuration.migrations.bandwidthPerMigration", l.needExplained(), l.CompletionTimeoutPerGiB, AtLeast(need))))
			return
		}
		if inPath != nil && inbound > 0 && bw/int64(inbound) < need {
			warns = append(warns, fmt.Sprintf("%s: %d migrations streaming into a node share its %s: %s each, below the %s one needs (%s); "+
				"each then streams slower than bandwidthPerMigration, and a guest dirtying memory faster than its share never converges "+
				"(progressTimeout %d s) or runs into completionTimeoutPerGiB (%d s per GiB); set it to at most %d, or leave it out to derive it",
				inPath, inbound, Rate(bw), Rate(bw/int64(inbound)), Rate(need), l.needExplained(), l.ProgressTimeout, l.CompletionTimeoutPerGiB, max(bw/need, 1)))
		}
		if bwPath != nil && l.ParallelOutboundPerNode > 1 && bw/int64(l.ParallelOutboundPerNode) < need {
			warns = append(warns, fmt.Sprintf("%s: KubeVirt lets %d migrations leave a node at once (parallelOutboundMigrationsPerNode), which "+
				"share its %s outbound: %s each, below the %s one needs; raise it to at least %s, or lower parallelOutboundMigrationsPerNode",
				bwPath, l.ParallelOutboundPerNode, Rate(bw), Rate(bw/int64(l.ParallelOutboundPerNode)), Rate(need), AtLeast(need*int64(l.ParallelOutboundPerNode))))
		}
	}
	check(b.Bandwidth.Value(), b.InboundMigrations, fld.Child(keyBandwidth), fld.Child(keyInbound), b.Bandwidth.String())
	for i, o := range b.Nodes {
		p := fld.Child(keyNodes).Index(i)
		bw, bwPath, text := b.Bandwidth.Value(), (*field.Path)(nil), ""
		if o.Bandwidth != nil {
			bw, bwPath, text = o.Bandwidth.Value(), p.Child(keyBandwidth), o.Bandwidth.String()
		}
		var inPath *field.Path
		if o.InboundMigrations > 0 {
			inPath = p.Child(keyInbound)
		}
		check(bw, o.InboundMigrations, bwPath, inPath, text)
	}
	return errs, warns
}

// needExplained says where Need comes from.
func (l MigrationLimits) needExplained() string {
	if l.BandwidthPerMigration > 0 {
		return fmt.Sprintf("%s, the KubeVirt CR's bandwidthPerMigration %s plus %s", Rate(l.Need()), Rate(l.BandwidthPerMigration), wireOverheadExplained)
	}
	return fmt.Sprintf("%s: bandwidthPerMigration is unlimited, and below 1 GiB per completionTimeoutPerGiB (%d s) plus %s even a guest "+
		"that dirties nothing hits KubeVirt's completion timeout", Rate(l.Need()), l.CompletionTimeoutPerGiB, wireOverheadExplained)
}

// Rate words bytes a second as a binary quantity with /s ("1Gi/s", "68Mi/s"), rounded to
// a tenth where it is not whole.
func Rate(bytesPerSecond int64) string {
	units := []struct {
		suffix string
		size   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}
	for _, u := range units {
		if bytesPerSecond >= u.size {
			if bytesPerSecond%u.size == 0 {
				return fmt.Sprintf("%d%s/s", bytesPerSecond/u.size, u.suffix)
			}
			return fmt.Sprintf("%.1f%s/s", float64(bytesPerSecond)/float64(u.size), u.suffix)
		}
	}
	return fmt.Sprintf("%d/s", bytesPerSecond)
}

// AtLeast is the smallest whole number of Mi (Ki below 1Mi) at or above bytesPerSecond, as a
// budget is written: what to raise a budget to.
func AtLeast(bytesPerSecond int64) string {
	if bytesPerSecond < 1<<20 {
		return fmt.Sprintf("%dKi", ceilDiv(bytesPerSecond, 1<<10))
	}
	return fmt.Sprintf("%dMi", ceilDiv(bytesPerSecond, 1<<20))
}

// Quantity is bytes a second as the quantity a budget is written in.
func Quantity(bytesPerSecond int64) resource.Quantity {
	return *resource.NewQuantity(bytesPerSecond, resource.BinarySI)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
