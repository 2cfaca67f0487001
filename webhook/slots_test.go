package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/slots"
)

// slotState is the validator's State with the traffic's count and the VMIMs the cache shows set
// by the test (the count is a snapshot older than the cache, as the derived count can be).
type slotState struct {
	migrationcheck.State
	traffic *migrationcheck.Traffic
	cached  []*kubevirtv1.VirtualMachineInstanceMigration
}

func (s *slotState) Traffic(context.Context) (*migrationcheck.Traffic, error) { return s.traffic, nil }

func (s *slotState) MigrationsOf(_ context.Context, namespace, vmiName string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error) {
	var out []*kubevirtv1.VirtualMachineInstanceMigration
	for _, m := range s.cached {
		if m.Namespace == namespace && m.Spec.VMIName == vmiName {
			out = append(out, m)
		}
	}
	return out, nil
}

// TestMigrationInboundSlot: rule inboundSlot through the VMIM validator with the reservations,
// node-0 (the VMI's) and node-1, node-2 as targets, inbound limit 1, one migration ("s") streaming
// into node-1: one slot left. Faults caught, each seen to fail once: a reservation dropped because
// the cache shows its VMIM while the count (older) does not hold it ("the race" near miss: two
// migrations let into one slot, seen on the drain spec); a finished migration's reservation still
// holding its slot; the reservation written on a refusal or a dry run.
func TestMigrationInboundSlot(t *testing.T) {
	ns := vmim("x", "vm-x", "").Namespace
	streaming := vmim("s", "vm-s", kubevirtv1.MigrationRunning)
	vmiS := vmi("node-0", nil)
	vmiS.Name = "vm-s"
	count := migrationcheck.CountTraffic([]*kubevirtv1.VirtualMachineInstanceMigration{streaming},
		func(string, string) *kubevirtv1.VirtualMachineInstance { return vmiS },
		func(types.UID) []*corev1.Pod {
			return []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher",
				kubevirtv1.MigrationJobLabel: string(streaming.UID)}}, Spec: corev1.PodSpec{NodeName: "node-1"}}}
		})
	other := vmim("other", "vm-o", kubevirtv1.MigrationScheduling)
	otherDone := vmim("other", "vm-o", kubevirtv1.MigrationSucceeded)
	reserve := func(uid types.UID, vmiName string) slots.Reservation {
		return slots.Reservation{UID: uid, Namespace: ns, VMI: vmiName, Expires: time.Now().Add(time.Minute)}
	}
	tests := []struct {
		name     string
		reserved []slots.Reservation
		cached   []*kubevirtv1.VirtualMachineInstanceMigration
		dryRun   bool
		refused  bool
	}{
		{name: "nothing reserved: admitted, reserved"},
		{name: "another admission's reservation, its VMIM not cached yet: refused", reserved: []slots.Reservation{reserve(other.UID, "vm-o")}, refused: true},
		{name: "the race: its VMIM cached, the count older (near miss): refused", reserved: []slots.Reservation{reserve(other.UID, "vm-o")},
			cached: []*kubevirtv1.VirtualMachineInstanceMigration{other}, refused: true},
		{name: "its VMIM cached Succeeded: admitted", reserved: []slots.Reservation{reserve(other.UID, "vm-o")},
			cached: []*kubevirtv1.VirtualMachineInstanceMigration{otherDone}},
		{name: "the streaming migration's own reservation: counted once, admitted", reserved: []slots.Reservation{reserve(streaming.UID, "vm-s")}},
		{name: "dry run: admitted, nothing reserved", dryRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, _, r := newTestValidator(t)
			r.settings[v1beta1.MigrationPolicy] = &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationPolicy},
				Value: `{"budget":{"bandwidth":"1Gi","inboundMigrations":1}}`}
			v.State = &slotState{State: v.State, traffic: count, cached: tt.cached}
			scheme := runtime.NewScheme()
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(scheme)
			if tt.reserved != nil {
				b = b.WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "migranet-system", Name: slots.ConfigMapName},
					Data: slots.Data(tt.reserved)})
			}
			c := b.Build()
			v.Slots = &slots.Store{Reader: c, Writer: c, Namespace: "migranet-system"}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{DryRun: ptrTo(tt.dryRun)}})
			m := vmim("mine", testVMI, "")
			warnings, err := v.ValidateCreate(ctx, m)
			switch {
			case tt.refused && (err == nil || !strings.Contains(err.Error(), "inboundSlot")):
				t.Fatalf("admitted (%v), want refused by inboundSlot", err)
			case !tt.refused && err != nil:
				t.Fatalf("refused: %v", err)
			}
			for _, w := range warnings {
				if strings.Contains(w, "inboundSlot") {
					t.Errorf("warning %q", w)
				}
			}
			cm := &corev1.ConfigMap{}
			_ = c.Get(context.Background(), client.ObjectKey{Namespace: "migranet-system", Name: slots.ConfigMapName}, cm)
			mine := false
			for _, res := range slots.Parse(cm.Data) {
				mine = mine || res.UID == m.UID
			}
			if want := !tt.refused && !tt.dryRun; mine != want {
				t.Errorf("reserved = %v, want %v", mine, want)
			}
		})
	}
}
