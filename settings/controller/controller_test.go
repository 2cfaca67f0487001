package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// The settings controller's steps through controller-runtime's fake client: which objects it
// writes, not how the API server stores them (the integration suite runs the real one). Names
// and hashes are literals computed outside migranet:
//
//	printf '%s' '{"clusterNetwork":"migration","vlan":0,"range":"192.168.100.0/24"}' | sha256sum
//	→ 5cf7ae62aa47207da4eda9a3526362c59fa6149796fe40c40856bb7c48f110bc
//	printf '%s' '{"clusterNetwork":"migration","vlan":0,"range":"10.77.0.0/24"}' | sha256sum
//	→ 50f247064f01d21e833751202e331404b092a62514d015b1af96b3e095249c3f
const (
	ctlValueA = `{"range":"192.168.100.0/24", "clusterNetwork":"migration"}`
	ctlHashA  = "5cf7ae62aa47207da4eda9a3526362c59fa6149796fe40c40856bb7c48f110bc"
	ctlNADA   = "vm-migration-network-5cf7ae62aa"
	ctlValueB = `{"clusterNetwork":"migration","range":"10.77.0.0/24"}`
	ctlHashB  = "50f247064f01d21e833751202e331404b092a62514d015b1af96b3e095249c3f"
	ctlNADB   = "vm-migration-network-50f247064f"
)

type controllerEnv struct {
	t   *testing.T
	c   client.Client
	ctl *Controller
	rec *record.FakeRecorder
	// statusWrites counts the status patches sent.
	statusWrites int
}

// events drains the events recorded so far.
func (e *controllerEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// reconcile runs one reconcile without changing anything, fails the test if it writes the
// status, and returns the setting's resourceVersion before and after it.
func (e *controllerEnv) reconcile() (before, after string) {
	e.t.Helper()
	ctx := context.Background()
	s := &v1beta1.Setting{}
	key := client.ObjectKey{Name: v1beta1.MigrationNetwork}
	if err := e.c.Get(ctx, key, s); err != nil {
		e.t.Fatal(err)
	}
	before = s.ResourceVersion
	writes := e.statusWrites
	defer func() {
		if e.statusWrites != writes {
			e.t.Errorf("a reconcile with nothing to do sent %d status writes", e.statusWrites-writes)
		}
	}()
	if _, err := e.ctl.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.Get(ctx, key, s); err != nil {
		e.t.Fatal(err)
	}
	return before, s.ResourceVersion
}

func newControllerEnv(t *testing.T, objs ...client.Object) *controllerEnv {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1beta1.AddToScheme, kubevirtv1.AddToScheme, nadv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kv := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	s := &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}}
	e := &controllerEnv{t: t, rec: record.NewFakeRecorder(100)}
	e.c = fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1beta1.Setting{}).
		WithObjects(append([]client.Object{kv, s}, objs...)...).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			e.statusWrites++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	e.ctl = &Controller{Client: e.c, Recorder: e.rec, KubeVirtNamespace: "kubevirt"}
	return e
}

// set stores value in the setting and reconciles it.
func (e *controllerEnv) set(value string) {
	e.t.Helper()
	e.store(func(s *v1beta1.Setting) { s.Value = value })
}

// store edits the setting as a client bypassing admission would, and reconciles it.
func (e *controllerEnv) store(edit func(*v1beta1.Setting)) {
	e.t.Helper()
	ctx := context.Background()
	s := &v1beta1.Setting{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		e.t.Fatal(err)
	}
	edit(s)
	value := s.Value
	if err := e.c.Update(ctx, s); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.ctl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}}); err != nil {
		e.t.Fatalf("reconcile %s: %v", value, err)
	}
}

// state is what the controller is responsible for: the KubeVirt CR's migrations.network (nil:
// unset), the NADs in the KubeVirt namespace, and the applied hash.
func (e *controllerEnv) state() (network *string, nads []string, applied string) {
	e.t.Helper()
	ctx := context.Background()
	kv := &kubevirtv1.KubeVirt{}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "kubevirt"}, kv); err != nil {
		e.t.Fatal(err)
	}
	if mc := kv.Spec.Configuration.MigrationConfiguration; mc != nil {
		network = mc.Network
	}
	list := &nadv1.NetworkAttachmentDefinitionList{}
	if err := e.c.List(ctx, list, client.InNamespace("kubevirt")); err != nil {
		e.t.Fatal(err)
	}
	for _, n := range list.Items {
		nads = append(nads, n.Name)
	}
	s := &v1beta1.Setting{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		e.t.Fatal(err)
	}
	return network, nads, s.Status.AppliedHash
}

func (e *controllerEnv) expect(step string, wantNetwork string, wantNADs []string, wantApplied string) {
	e.t.Helper()
	network, nads, applied := e.state()
	got := ""
	if network != nil {
		got = *network
		if got == "" {
			e.t.Errorf("%s: migrations.network is set to \"\"; want it removed", step)
		}
	}
	if got != wantNetwork {
		e.t.Errorf("%s: KubeVirt migrations.network = %q, want %q", step, got, wantNetwork)
	}
	if len(nads) != len(wantNADs) {
		e.t.Errorf("%s: NADs %q, want %q", step, nads, wantNADs)
	} else {
		for i := range nads {
			if nads[i] != wantNADs[i] {
				e.t.Errorf("%s: NADs %q, want %q", step, nads, wantNADs)
				break
			}
		}
	}
	if applied != wantApplied {
		e.t.Errorf("%s: status.appliedHash = %q, want %q", step, applied, wantApplied)
	}
}

// TestControllerAppliesChangesAndRollsBack: a value points the KubeVirt CR at its NAD and records
// its hash; a new value moves the CR and deletes the old NAD but never the active one nor one
// migranet does not manage; clearing the value removes migrations.network.
// Catches: the KubeVirt CR never patched; appliedHash never recorded; the active NAD deleted by
// the cleanup; a rollback leaving migrations.network set.
func TestControllerAppliesChangesAndRollsBack(t *testing.T) {
	foreign := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Name: "storage", Namespace: "kubevirt"}}
	e := newControllerEnv(t, foreign)
	e.set(ctlValueA)
	e.expect("value A", ctlNADA, []string{"storage", ctlNADA}, ctlHashA)
	e.set(ctlValueB)
	e.expect("value B", ctlNADB, []string{"storage", ctlNADB}, ctlHashB)
	e.set(ctlValueB) // a second reconcile of the same value changes nothing
	e.expect("value B again", ctlNADB, []string{"storage", ctlNADB}, ctlHashB)
	// Compare before every write: nothing changed, so no status write and no event.
	if before, after := e.reconcile(); before != after {
		t.Errorf("a reconcile with nothing to do wrote the setting (resourceVersion %s → %s)", before, after)
	}
	e.set("")
	e.expect("cleared", "", []string{"storage"}, "")
	want := []string{
		"Normal Applied KubeVirt migrations.network points at " + ctlNADA,
		"Normal Applied KubeVirt migrations.network points at " + ctlNADB,
		"Normal Disabled migration network disabled: migrations use the pod network",
	}
	if got := e.events(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q (one per newly applied value, none when nothing changed)", got, want)
	}
}

// TestControllerReportsAnInvalidValue: a value that bypassed admission is reported, not applied.
func TestControllerReportsAnInvalidValue(t *testing.T) {
	e := newControllerEnv(t)
	e.set(`{"clusterNetwork":"migration","range":`)
	s := &v1beta1.Setting{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionConfigured)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidValue || s.Status.Summary != "invalid" {
		t.Errorf("Configured %+v, summary %q; want False/%s and summary invalid", c, s.Status.Summary, ReasonInvalidValue)
	}
	if ev := e.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+ReasonInvalidValue+" ") {
		t.Errorf("events %q, want one Warning %s", ev, ReasonInvalidValue)
	}
}

// TestControllerReportsAFailedStep: when patching the KubeVirt CR fails, Reconcile returns the
// error (so it is retried with backoff) and Configured says which step failed.
func TestControllerReportsAFailedStep(t *testing.T) {
	e := newControllerEnv(t)
	failing := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*kubevirtv1.KubeVirt); ok {
			return errors.New("injected: the API server refused the patch")
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	e.ctl.Client = interceptor.NewClient(e.c.(client.WithWatch), failing)
	ctx := context.Background()
	s := &v1beta1.Setting{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		t.Fatal(err)
	}
	s.Value = ctlValueA
	if err := e.c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	_, err := e.ctl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}})
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Errorf("Reconcile = %v, want the patch error", err)
	}
	if err := e.c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionConfigured)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonKubeVirtFailed || s.Status.AppliedHash != "" {
		t.Errorf("Configured = %+v, appliedHash %q; want False/%s and nothing applied", c, s.Status.AppliedHash, ReasonKubeVirtFailed)
	}
	if ev := e.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+ReasonKubeVirtFailed+" ") {
		t.Errorf("events %q, want one Warning %s", ev, ReasonKubeVirtFailed)
	}
}

// TestControllerRepairsAHandEditedNAD: a hand edit of the active NAD's config or of its labels is
// put back on the next reconcile; labels and annotations someone added stay.
func TestControllerRepairsAHandEditedNAD(t *testing.T) {
	e := newControllerEnv(t)
	e.set(ctlValueA)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "kubevirt", Name: ctlNADA}
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := e.c.Get(ctx, key, nad); err != nil {
		t.Fatal(err)
	}
	const config = `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"ipam":{"type":"whereabouts","range":"192.168.100.0/24"}}`
	if nad.Spec.Config != config {
		t.Fatalf("config %s, want %s", nad.Spec.Config, config)
	}
	// Compare before every write: a reconcile that finds the NAD as rendered does not touch it.
	rv := nad.ResourceVersion
	e.set(ctlValueA)
	if err := e.c.Get(ctx, key, nad); err != nil || nad.ResourceVersion != rv {
		t.Errorf("an unchanged NAD was written (resourceVersion %s → %s, %v)", rv, nad.ResourceVersion, err)
	}
	for _, edit := range []func(*nadv1.NetworkAttachmentDefinition){
		func(n *nadv1.NetworkAttachmentDefinition) { n.Spec.Config = `{"type":"bridge"}` },
		func(n *nadv1.NetworkAttachmentDefinition) { delete(n.Labels, settings.LabelManagedBy) },
	} {
		if err := e.c.Get(ctx, key, nad); err != nil {
			t.Fatal(err)
		}
		edit(nad)
		nad.Labels["team"] = "net"
		if err := e.c.Update(ctx, nad); err != nil {
			t.Fatal(err)
		}
		e.set(ctlValueA)
		if err := e.c.Get(ctx, key, nad); err != nil {
			t.Fatal(err)
		}
		if nad.Spec.Config != config || nad.Labels[settings.LabelManagedBy] != settings.ManagedBy || nad.Labels["team"] != "net" {
			t.Errorf("after a hand edit and a reconcile: config %s, labels %v", nad.Spec.Config, nad.Labels)
		}
	}
}

// TestControllerCleanupErrors: a NAD already gone when the cleanup deletes it is no failure; any
// other delete error fails the step (Configured False, CleanupFailed) and is returned.
func TestControllerCleanupErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"already gone", apierrors.NewNotFound(nadv1.Resource("network-attachment-definitions"), ctlNADA), false},
		{"refused", errors.New("injected: delete refused"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newControllerEnv(t)
			e.set(ctlValueA)
			e.ctl.Client = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
				Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return tc.err }})
			ctx := context.Background()
			s := &v1beta1.Setting{}
			if err := e.c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
				t.Fatal(err)
			}
			s.Value = ctlValueB
			if err := e.c.Update(ctx, s); err != nil {
				t.Fatal(err)
			}
			_, err := e.ctl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile = %v, want an error: %v", err, tc.wantErr)
			}
			if err := e.c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionConfigured)
			want := ReasonApplied
			if tc.wantErr {
				want = ReasonCleanupFailed
			}
			if c == nil || c.Reason != want {
				t.Errorf("Configured = %+v, want reason %s", c, want)
			}
		})
	}
}

// TestControllerRecordsRangesBeforeNADs: every range the controller renders a NAD of is in
// status.ranges before that NAD is created, and stays there after the value moves on.
// Catches: a range recorded only after its NAD (a crash between them leaves a pool migranet would
// never clean), or dropped when the value changes (its empty pool left forever).
func TestControllerRecordsRangesBeforeNADs(t *testing.T) {
	e := newControllerEnv(t)
	var atCreate [][]string
	e.c = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*nadv1.NetworkAttachmentDefinition); ok {
			s := &v1beta1.Setting{}
			if err := c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
				return err
			}
			atCreate = append(atCreate, s.Status.Ranges)
		}
		return c.Create(ctx, obj, opts...)
	}})
	e.ctl.Client = e.c
	e.set(ctlValueA)
	e.set(ctlValueB)
	e.set(ctlValueA)
	want := [][]string{{"192.168.100.0/24"}, {"192.168.100.0/24", "10.77.0.0/24"}, {"192.168.100.0/24", "10.77.0.0/24"}}
	if len(atCreate) != len(want) {
		t.Fatalf("status.ranges at each NAD create: %q, want %q", atCreate, want)
	}
	for i := range want {
		if strings.Join(atCreate[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("status.ranges at NAD create %d: %q, want %q", i, atCreate[i], want[i])
		}
	}
}
