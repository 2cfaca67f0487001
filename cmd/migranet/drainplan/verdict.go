package drainplan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// What the drain does with one VMI.
const (
	// Moves: it is live-migrated to Target.
	Moves = "moves"
	// Stops: the drain evicts its pod and the VM shuts down (restarted elsewhere only if its VM's
	// run strategy says so). The drain completes; the VMI is left behind.
	Stops = "stops"
	// Blocks: the drain cannot complete while the VMI is there (its eviction is refused, or its
	// migration refused or failing and retried).
	Blocks = "blocks"
	// Waits: evictionStrategy External: the eviction is refused and the VMI marked for an
	// external controller to act on; the drain waits for it.
	Waits = "waits"
	// Skipped: not running on the node (shutting down, finished): nothing to move.
	Skipped = "skipped"
)

// Eviction is what virt-api's pod eviction admitter (KubeVirt v1.8.4,
// pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go) and the
// evacuation controller do with a VMI's pod when `kubectl drain` evicts it.
type Eviction struct {
	Verdict string
	// Migrates is true when the evacuation controller will migrate the VMI: the rest of the
	// verdict (admission, target, time) decides then.
	Migrates bool
	// Strategy is the evictionStrategy in force (the VMI's, else the KubeVirt CR's), "" for none.
	Strategy string
	// Why says it in KubeVirt's words; "" when it migrates.
	Why string
}

// EvictionOf judges vmi under the cluster-wide evictionStrategy (the KubeVirt CR's
// spec.configuration.evictionStrategy; nil for none) as virt-api's eviction admitter does:
// VMIEvictionStrategy (the VMI's own, else the cluster's), LiveMigrate refused while not
// LiveMigratable, LiveMigrateIfPossible evicted then, External marked and refused, none or None
// evicted.
func EvictionOf(vmi *kubevirtv1.VirtualMachineInstance, cluster *kubevirtv1.EvictionStrategy) Eviction {
	if vmi.IsFinal() || vmi.DeletionTimestamp != nil || vmi.Status.Phase != kubevirtv1.Running {
		return Eviction{Verdict: Skipped, Why: fmt.Sprintf("not running (phase %s)", orNone(string(vmi.Status.Phase)))}
	}
	s := cluster
	if vmi.Spec.EvictionStrategy != nil {
		s = vmi.Spec.EvictionStrategy
	}
	e := Eviction{}
	if s != nil {
		e.Strategy = string(*s)
	}
	where := "the VMI's spec.evictionStrategy"
	if vmi.Spec.EvictionStrategy == nil {
		where = "the KubeVirt CR's spec.configuration.evictionStrategy"
	}
	migratable, cond := LiveMigratable(vmi)
	switch {
	case s == nil:
		e.Verdict, e.Why = Stops, "no evictionStrategy (neither the VMI nor the KubeVirt CR sets one): the drain evicts its pod and the VM shuts down"
	case *s == kubevirtv1.EvictionStrategyNone:
		e.Verdict, e.Why = Stops, "evictionStrategy None ("+where+"): the drain evicts its pod and the VM shuts down"
	case *s == kubevirtv1.EvictionStrategyExternal:
		e.Verdict, e.Why = Waits, "evictionStrategy External ("+where+"): virt-api refuses the eviction and marks the VMI for an external controller; the drain waits until it moves or stops the VM"
	case *s == kubevirtv1.EvictionStrategyLiveMigrate && !migratable:
		e.Verdict, e.Why = Blocks, fmt.Sprintf("evictionStrategy LiveMigrate but %s: virt-api refuses the eviction (\"VMI %s is configured with an eviction strategy but is not live-migratable\") and the drain cannot complete; stop the VM or make it migratable", cond, vmi.Name)
	case *s == kubevirtv1.EvictionStrategyLiveMigrateIfPossible && !migratable:
		e.Verdict, e.Why = Stops, "evictionStrategy LiveMigrateIfPossible but "+cond+": the drain evicts its pod and the VM shuts down"
	default:
		e.Verdict, e.Migrates = Moves, true
	}
	return e
}

// LiveMigratable reports KubeVirt's LiveMigratable condition and words it when it is not True:
// "not LiveMigratable (DisksNotLiveMigratable: ...)", with the host devices the VMI asks for.
func LiveMigratable(vmi *kubevirtv1.VirtualMachineInstance) (bool, string) {
	for _, c := range vmi.Status.Conditions {
		if c.Type != kubevirtv1.VirtualMachineInstanceIsMigratable {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return true, ""
		}
		why := fmt.Sprintf("LiveMigratable is %s", c.Status)
		if c.Reason != "" || c.Message != "" {
			why += " (" + strings.TrimSuffix(c.Reason+": "+c.Message, ": ") + ")"
		}
		return false, why + hostDevices(vmi)
	}
	return false, "KubeVirt has not reported LiveMigratable" + hostDevices(vmi)
}

// StorageNote words KubeVirt's StorageLiveMigratable condition when it is False ("" otherwise):
// it concerns moving the VMI's volumes, which a drain does not, so it is a note, not a verdict.
func StorageNote(vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable && c.Status == corev1.ConditionFalse {
			return strings.TrimSuffix("StorageLiveMigratable is False ("+c.Reason+": "+c.Message, ": ") + "): its volumes cannot be moved, the drain moves none"
		}
	}
	return ""
}

// hostDevices names the host devices and GPUs the VMI asks for, KubeVirt's
// HostDeviceNotLiveMigratable.
func hostDevices(vmi *kubevirtv1.VirtualMachineInstance) string {
	var names []string
	for _, d := range vmi.Spec.Domain.Devices.HostDevices {
		names = append(names, "host device "+d.Name)
	}
	for _, g := range vmi.Spec.Domain.Devices.GPUs {
		names = append(names, "GPU "+g.Name)
	}
	if len(names) == 0 {
		return ""
	}
	return "; it has " + strings.Join(names, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
