package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// The validators as the API server calls them, over the memReader stand-in for the cache: what
// the handlers read and how they answer (status code, field), which the pure rules cannot show.

// asUser is ctx carrying an admission request made by user.
func asUser(ctx context.Context, user string) context.Context {
	return admission.NewContextWithRequest(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UserInfo: authenticationv1.UserInfo{Username: user}}})
}

// TestCreateHonoursExemptUsers: the requesting user comes from the admission request and the
// migration-policy setting's exemptUsers skip feasibleTarget for that user only.
// Catches: exemptUsers never honoured by the VMIM webhook (the request's user not read).
func TestCreateHonoursExemptUsers(t *testing.T) {
	v, _, _, r := newTestValidator(t)
	r.settings[v1beta1.MigrationPolicy] = &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationPolicy, ResourceVersion: "1"},
		Value: `{"exemptUsers":["system:serviceaccount:kubevirt:kubevirt-controller"]}`}
	ctx := context.Background()
	if _, err := v.ValidateCreate(asUser(ctx, "system:serviceaccount:kubevirt:kubevirt-controller"), vmim("evacuate", "pinned", "")); err != nil {
		t.Errorf("an exempt user's migration of a pinned VMI was refused: %v", err)
	}
	if _, err := v.ValidateCreate(asUser(ctx, "alice"), vmim("by-alice", "pinned", "")); err == nil {
		t.Error("a user who is not exempt migrated a pinned VMI")
	}
}

// TestRefusalStatusCodes: a refused create is 422 Invalid on spec.vmiName; a refused cancel is 403
// Forbidden (the migration is valid, deleting it is not allowed now), as docs/settings-and-admission.md documents.
// Catches: a refused cancel answered 422 Invalid; a rule's field replaced by spec.vmiName.
func TestRefusalStatusCodes(t *testing.T) {
	v, _, _, r := newTestValidator(t)
	ctx := context.Background()
	_, err := v.ValidateCreate(ctx, vmim("mig", "pinned", ""))
	if !apierrors.IsInvalid(err) {
		t.Errorf("refused create: %v, want 422 Invalid", err)
	} else if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != "spec.vmiName" {
		t.Errorf("refused create causes = %+v, want one on spec.vmiName", causes)
	}
	r.vmis[testVMI] = postCopyVMI("uid-move")
	_, err = v.ValidateDelete(ctx, vmim("move", testVMI, kubevirtv1.MigrationRunning))
	if !apierrors.IsForbidden(err) {
		t.Errorf("refused cancel: %v, want 403 Forbidden", err)
	}
	// The rule's own field, not the default spec.vmiName: the way out is that annotation.
	if err == nil || !strings.Contains(err.Error(), "metadata.annotations[migranet.io/force-cancel]: Forbidden: migranet postCopyCancel") {
		t.Errorf("refused cancel %v does not name the force-cancel annotation", err)
	}
}

// settingValidator has three nodes: node-a and node-b run virt-handler (label virt=yes) and carry
// cluster network "migration"; node-x carries neither.
func settingValidator(kv *kubevirtv1.KubeVirt) (*SettingValidator, *memReader) {
	r := &memReader{kv: kv, settings: map[string]*v1beta1.Setting{}, nodes: []corev1.Node{
		*node("node-a", withLabels("virt", "yes")),
		*node("node-b", withLabels("virt", "yes")),
		*node("node-x", withoutLabel(settings.ClusterNetworkLabelPrefix+testCN)),
	}}
	return &SettingValidator{Reader: r, State: &migrationcheck.APIState{Reader: r, KubeVirtNamespace: "kubevirt"}}, r
}

// placedKubeVirt runs virt-handler on the nodes labelled virt=yes.
func placedKubeVirt() *kubevirtv1.KubeVirt {
	kv := readyKubeVirt()
	kv.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: map[string]string{"virt": "yes"}}}
	return kv
}

func networkSetting(value string) *v1beta1.Setting {
	return &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}, Value: value}
}

const settingValue = `{"clusterNetwork":"migration","range":"192.168.100.0/24"}`

// TestSettingClusterNetworkOnVirtHandlerNodes: the cluster network is required only on the nodes
// where virt-handler runs, i.e. those matching the KubeVirt CR's
// spec.workloads.nodePlacement.nodeSelector.
// Catches: setting validation ignoring KubeVirt's nodePlacement.
func TestSettingClusterNetworkOnVirtHandlerNodes(t *testing.T) {
	v, _ := settingValidator(placedKubeVirt())
	if _, err := v.ValidateCreate(context.Background(), networkSetting(settingValue)); err != nil {
		t.Errorf("node-x runs no virt-handler, yet its missing cluster network refused the setting: %v", err)
	}
	v, _ = settingValidator(readyKubeVirt())
	_, err := v.ValidateCreate(context.Background(), networkSetting(settingValue))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "node-x") {
		t.Errorf("without nodePlacement node-x runs virt-handler and lacks the cluster network: %v, want 422 naming node-x", err)
	}
}

// TestSettingChangeRefusedWithMigrationsInFlight: changing the network while a migration runs is
// refused (422, field value, naming the migration); finished migrations do not count, and an
// update that keeps the value is admitted.
// Catches: a setting change allowed with migrations in flight.
func TestSettingChangeRefusedWithMigrationsInFlight(t *testing.T) {
	v, r := settingValidator(placedKubeVirt())
	running, done := *vmim("running", testVMI, kubevirtv1.MigrationRunning), *vmim("done", "other", kubevirtv1.MigrationSucceeded)
	r.migrations = []kubevirtv1.VirtualMachineInstanceMigration{running, done}
	old, changed := networkSetting(""), networkSetting(settingValue)
	_, err := v.ValidateUpdate(context.Background(), old, changed)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), testNS+"/running") || strings.Contains(err.Error(), "done") {
		t.Fatalf("change with migration %s/running in flight: %v, want 422 naming it (and not the finished one)", testNS, err)
	}
	if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != "value" {
		t.Errorf("causes = %+v, want one on value", causes)
	}
	if !strings.Contains(err.Error(), "while 1 migration(s) are in progress ("+testNS+"/running): changing it") {
		t.Errorf("message %q does not name exactly the one migration", err)
	}
	// Seven in flight: five named, the rest counted.
	r.migrations = nil
	for i := range 7 {
		r.migrations = append(r.migrations, *vmim(fmt.Sprintf("m%d", i), testVMI, kubevirtv1.MigrationRunning))
	}
	if _, err := v.ValidateUpdate(context.Background(), old, changed); err == nil || !strings.Contains(err.Error(), testNS+"/m4 and 2 more)") {
		t.Errorf("seven in flight: %v, want five named and 2 more", err)
	}
	relabelled := changed.DeepCopy()
	relabelled.Labels = map[string]string{"team": "net"}
	if _, err := v.ValidateUpdate(context.Background(), changed, relabelled); err != nil {
		t.Errorf("an update that keeps the value was refused: %v", err)
	}
	r.migrations = []kubevirtv1.VirtualMachineInstanceMigration{done}
	if _, err := v.ValidateUpdate(context.Background(), old, changed); err != nil {
		t.Errorf("change with only finished migrations: %v", err)
	}
}

// TestCreateReadsKubeVirtAndNetwork: what ValidateCreate reads from the cache reaches the rules —
// no KubeVirt CR is refused by kubevirtReady (not a crash), and a valid migration network whose
// rollout no replica has observed yet is refused by networkReady.
func TestCreateReadsKubeVirtAndNetwork(t *testing.T) {
	ctx := context.Background()
	v, _, _, r := newTestValidator(t)
	r.kv = nil
	if _, err := v.ValidateCreate(ctx, vmim("no-kv", testVMI, "")); err == nil || !strings.Contains(err.Error(), "migranet kubevirtReady") {
		t.Errorf("without a KubeVirt CR: %v, want a kubevirtReady refusal", err)
	}
	v, _, _, r = newTestValidator(t)
	r.settings[v1beta1.MigrationNetwork] = &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork, ResourceVersion: "7"},
		Value: settingValue}
	if _, err := v.ValidateCreate(ctx, vmim("unobserved", testVMI, "")); err == nil || !strings.Contains(err.Error(), "migranet networkReady") {
		t.Errorf("network set, rollout not observed: %v, want a networkReady refusal", err)
	}
}

// TestNADDeleteProtectsTheActiveNetwork: the NAD the KubeVirt CR names cannot be deleted, whoever
// rendered it and whatever migranet's setting renders now; the refusal is decided on the CR as the
// API server holds it, so a replica whose cache lags behind a controller that moved the CR away
// lets the delete through, and one whose cache is ahead of nothing refuses.
func TestNADDeleteProtectsTheActiveNetwork(t *testing.T) {
	// settingValue renders to vm-migration-network-5cf7ae62aa: printf '%s'
	// '{"clusterNetwork":"migration","vlan":0,"range":"192.168.100.0/24"}' | sha256sum
	const rendered, old, older = "vm-migration-network-5cf7ae62aa", "vm-migration-network-0000000000", "vm-migration-network-1111111111"
	managed := map[string]string{settings.LabelManagedBy: settings.ManagedBy}
	nad := func(name string, labels map[string]string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, Labels: labels}}
	}
	const noAPI = "-" // no APIReader: the cache is all there is
	for _, tc := range []struct {
		name        string
		cached, api string // migrations.network in the cache and in the API server
		nad         *nadv1.NetworkAttachmentDefinition
		allowed     bool
	}{
		{"the active managed NAD", rendered, rendered, nad(rendered, managed), false},
		{"the active managed NAD, no API reader", rendered, noAPI, nad(rendered, managed), false},
		// The hole of issue 52 (item 3): the setting moved on, but the KubeVirt CR still names the
		// old NAD (HCO has not copied the field, or is degraded; a mirror's source lags).
		{"a managed NAD the setting moved away from, still named by the CR", old, old, nad(old, managed), false},
		{"the same, no API reader", old, noAPI, nad(old, managed), false},
		{"the value changed twice, the CR still names the first", older, older, nad(older, managed), false},
		// The near miss the hole was opened for: migranet's controller patched the CR and deletes
		// the old NAD before this replica's cache saw the patch.
		{"a managed NAD the CR moved away from, cache lagging", old, rendered, nad(old, managed), true},
		{"an unmanaged NAD the CR names", old, old, nad(old, nil), false},
		{"an unmanaged NAD the CR moved away from, cache lagging (Harvester's removeOldNad)", old, rendered, nad(old, nil), true},
		{"a NAD nothing names", rendered, rendered, nad("storage", nil), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kvWith := func(network string) *kubevirtv1.KubeVirt {
				kv := readyKubeVirt()
				kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{Network: &network}
				return kv
			}
			r := &memReader{kv: kvWith(tc.cached), settings: map[string]*v1beta1.Setting{v1beta1.MigrationNetwork: networkSetting(settingValue)}}
			v := &NADValidator{Reader: r, KubeVirtNamespace: "kubevirt"}
			if tc.api != noAPI {
				v.APIReader = &memReader{kv: kvWith(tc.api)}
			}
			_, err := v.ValidateDelete(context.Background(), tc.nad)
			if tc.allowed && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.allowed && !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want 403 Forbidden", err)
			}
		})
	}
}
