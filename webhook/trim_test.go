package webhook

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TrimVMI serves both the manager's cache and `migranet status -w`'s.
func TestTrimVMI(t *testing.T) {
	state := &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "u", SourceNode: "a", TargetNode: "b", Mode: kubevirtv1.MigrationPostCopy}
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "x", ResourceVersion: "7", Labels: map[string]string{"big": "label"}},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
			Resources: kubevirtv1.ResourceRequirements{Requests: corev1.ResourceList{}}}, NodeSelector: map[string]string{"a": "b"}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: "a", Phase: kubevirtv1.Running, MigrationState: state, Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "eth0"}}},
	}
	out, err := TrimVMI(vmi)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*kubevirtv1.VirtualMachineInstance)
	want := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "x", ResourceVersion: "7"},
		Spec:       kubevirtv1.VirtualMachineInstanceSpec{NodeSelector: map[string]string{"a": "b"}},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{NodeName: "a", Phase: kubevirtv1.Running, MigrationState: state},
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("trimmed VMI (-want +got):\n%s", d)
	}
	if other, _ := TrimVMI("not a vmi"); other != "not a vmi" {
		t.Errorf("other objects must pass through, got %v", other)
	}
}

// TestTruncate: at most n bytes, cut on a rune boundary, "..." marking a cut; a string of
// exactly n bytes is kept whole; bytes that are no rune start at all never make it panic.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abc..."},
		{"ab€€", 8, "ab€€"},                // 2 + 3 + 3 bytes: fits exactly
		{"ab€€x", 8, "ab€..."},             // the second € would be split at byte 5: cut before it
		{"a€bcdef", 6, "a..."},             // cut at byte 3, inside €: back to 1
		{"\x80\x80\x80\x80\x80", 4, "..."}, // no rune start before the cut
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
