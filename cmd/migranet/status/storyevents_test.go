package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
)

// TestIdentify: which migration of a name a story tells, and its VMI. While the VMIM exists it
// is the VMIM's; once gone, the UID whose events were seen last, and the VMI of that migration
// (or of the refusal that is the story). Every case has its near miss. Faults caught, each
// injected once and seen to fail: the first UID found taken instead of the latest ("two gone
// migrations"), an event of another name or namespace lending its UID, the VMI of another UID's
// event taken, the VMIM's UID overridden by a newer event's.
func TestIdentify(t *testing.T) {
	const oldUID, newUID = types.UID("uid-old"), types.UID("uid-new")
	onVM := func(vm, name string, uid types.UID, d time.Duration) corev1.Event {
		e := vmiEv(settings.ReasonMigrationWarned, name, uid, "w", d, nil)
		e.InvolvedObject.Name = vm
		return e
	}
	otherNS := vmimEv(health.ReasonMigrationPathBroken, "move-vm1", "uid-elsewhere", "x", time.Second, nil)
	otherNS.Namespace = "elsewhere"
	for _, tc := range []struct {
		name    string
		story   Story
		uid     types.UID
		vmiName string
	}{
		{"the VMIM's, though a newer event names another UID", Story{VMIM: newVMIM(), Events: []corev1.Event{
			vmimEv("SuccessfulCreate", "move-vm1", newUID, "x", time.Second, nil)}}, vmimUID, "vm1"},
		{"two gone migrations: the one seen last", Story{Events: []corev1.Event{
			vmimEv("SuccessfulCreate", "move-vm1", oldUID, "x", 9*time.Minute, nil),
			vmimEv("SuccessfulCreate", "move-vm1", newUID, "x", 2*time.Minute, nil),
			vmimEv("FailedMigration", "move-vm1", oldUID, "x", 3*time.Minute, nil), // the older one, seen more often
			onVM("vm-old", "move-vm1", oldUID, 8*time.Minute),
			onVM("vm-new", "move-vm1", newUID, time.Minute)}}, newUID, "vm-new"},
		{"from the VMI's event alone (the migration's own events expired)", Story{Events: []corev1.Event{
			onVM("vm1", "move-vm1", vmimUID, time.Minute),
			onVM("vm2", "move-vm2", "uid-2", time.Second)}}, vmimUID, "vm1"},
		{"near miss: another name's and another namespace's events lend nothing", Story{Events: []corev1.Event{
			vmimEv("SuccessfulCreate", "move-vm1-b", newUID, "x", time.Second, nil), otherNS,
			onVM("vm2", "move-vm2", "uid-2", time.Second)}}, "", ""},
		{"a refusal after the gone migration: the refusal's VMI", Story{Events: []corev1.Event{
			onVM("vm-old", "move-vm1", oldUID, 5*time.Minute),
			vmiEv(settings.ReasonMigrationRefused, "move-vm1", "", "migration move-vm1 refused by migranet x", time.Minute, nil)}}, oldUID, "vm1"},
		{"near miss: a refusal a second older than the gone migration", Story{Events: []corev1.Event{
			onVM("vm-old", "move-vm1", oldUID, 5*time.Minute),
			vmiEv(settings.ReasonMigrationRefused, "move-vm1", "", "migration move-vm1 refused by migranet x", 5*time.Minute+time.Second, nil)}}, oldUID, "vm-old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.story
			s.Namespace, s.Name, s.Now = "apps", "move-vm1", now
			s.Identify()
			if s.UID != tc.uid || s.VMIName != tc.vmiName {
				t.Errorf("UID %q, VMI %q; want %q, %q", s.UID, s.VMIName, tc.uid, tc.vmiName)
			}
		})
	}
}
