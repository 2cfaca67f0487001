package webhook

import (
	"context"
	"errors"
	"fmt"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// memReader answers the reads MigrationValidator makes, from a few objects held in memory: it
// stands in for the informer cache, which only the integration suite runs for real.
type memReader struct {
	vmis       map[string]*kubevirtv1.VirtualMachineInstance
	kv         *kubevirtv1.KubeVirt
	settings   map[string]*v1beta1.Setting
	migrations []kubevirtv1.VirtualMachineInstanceMigration
	nodes      []corev1.Node
	nads       []nadv1.NetworkAttachmentDefinition
}

func (r *memReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *kubevirtv1.VirtualMachineInstance:
		if v, ok := r.vmis[key.Name]; ok && key.Namespace == testNS {
			*o = *v
			return nil
		}
	case *v1beta1.Setting:
		if s, ok := r.settings[key.Name]; ok {
			*o = *s
			return nil
		}
	case *nadv1.NetworkAttachmentDefinition:
		for i := range r.nads {
			if r.nads[i].Namespace == key.Namespace && r.nads[i].Name == key.Name {
				*o = r.nads[i]
				return nil
			}
		}
	}
	return apierrors.NewNotFound(kubevirtv1.Resource("object"), key.Name)
}

func (r *memReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *kubevirtv1.VirtualMachineInstanceMigrationList:
		l.Items = r.migrations
	case *kubevirtv1.KubeVirtList:
		l.Items = nil
		if r.kv != nil {
			l.Items = []kubevirtv1.KubeVirt{*r.kv}
		}
	case *corev1.NodeList:
		l.Items = r.nodes
	case *nadv1.NetworkAttachmentDefinitionList:
		l.Items = r.nads
	case *corev1.PodList:
		// Like a user who may not list pods: room on the nodes is not judged.
		return apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("memReader keeps no pods"))
	case *v1beta1.SettingList:
		l.Items = nil
		for _, st := range r.settings {
			l.Items = append(l.Items, *st)
		}
	default:
		return fmt.Errorf("memReader cannot list %T", list)
	}
	return nil
}

func pinnedVMI() *kubevirtv1.VirtualMachineInstance {
	v := vmi("node-0", map[string]string{"kubernetes.io/hostname": "node-0"})
	v.Name, v.UID = "pinned", "uid-pinned"
	return v
}

// newTestValidator admits a migration of testVMI (two other nodes can take it) and refuses one of
// "pinned" (feasibleTarget: only its own node matches) and of "missing" (vmiState).
func newTestValidator(t *testing.T) (*MigrationValidator, *Metrics, *record.FakeRecorder, *memReader) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &memReader{
		nodes: []corev1.Node{
			*node("node-0", withLabels("kubernetes.io/hostname", "node-0")),
			*node("node-1", withLabels("kubernetes.io/hostname", "node-1")),
			*node("node-2", withLabels("kubernetes.io/hostname", "node-2")),
		},
		vmis:     map[string]*kubevirtv1.VirtualMachineInstance{testVMI: vmi("node-0", nil), "pinned": pinnedVMI()},
		kv:       readyKubeVirt(),
		settings: map[string]*v1beta1.Setting{},
	}
	rec := record.NewFakeRecorder(100)
	v := &MigrationValidator{State: &migrationcheck.APIState{Reader: r, KubeVirtNamespace: "kubevirt"}, Metrics: m, Recorder: rec}
	return v, m, rec, r
}

func (m *Metrics) value(webhook, rule, result string) float64 {
	return testutil.ToFloat64(m.decisions.WithLabelValues(webhook, rule, result))
}

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestMigrationCountersAndEvents(t *testing.T) {
	v, m, rec, r := newTestValidator(t)
	ctx := context.Background()
	create := func(ctx context.Context, vmiName string) (admission.Warnings, error) {
		return v.ValidateCreate(ctx, vmim("mig-"+vmiName, vmiName, ""))
	}

	if _, err := create(ctx, testVMI); err != nil {
		t.Fatalf("feasible migration refused: %v", err)
	}
	if _, err := create(ctx, "pinned"); err == nil {
		t.Fatal("migration of a pinned VMI admitted")
	}
	if _, err := create(ctx, "missing"); err == nil {
		t.Fatal("migration of a missing VMI admitted")
	}
	dryRun := admission.NewContextWithRequest(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{DryRun: ptrTo(true)}})
	if _, err := create(dryRun, "pinned"); err == nil {
		t.Fatal("dry-run migration of a pinned VMI admitted")
	}

	events := drain(rec)
	if len(events) != 1 {
		t.Fatalf("events = %q, want exactly one: on the pinned VMI, none for the missing VMI or the dry run", events)
	}
	for _, s := range []string{"Warning", settings.ReasonMigrationRefused, "migration mig-pinned refused by migranet feasibleTarget: no node can receive",
		settings.AnnotationMigration + ":mig-pinned"} {
		if !strings.Contains(events[0], s) {
			t.Errorf("event %q lacks %q", events[0], s)
		}
	}

	// feasibleTarget in warn mode: admitted with a warning, counted as warned, one event saying so
	// (none for a dry run).
	r.settings[v1beta1.MigrationPolicy] = &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationPolicy, ResourceVersion: "2"},
		Value: `{"rules":{"feasibleTarget":"warn"}}`}
	if _, err := create(dryRun, "pinned"); err != nil {
		t.Fatalf("warn mode, dry run: %v", err)
	}
	// The API server fills the UID in before validating admission: the event names the migration
	// by it, in its annotations and its first line (two same-named migrations' events never fold).
	admitted := vmim("mig-pinned", "pinned", "")
	admitted.UID = "uid-pinned"
	warnings, err := v.ValidateCreate(ctx, admitted)
	if err != nil || len(warnings) == 0 {
		t.Fatalf("warn mode: warnings %q, error %v; want admitted with a warning", warnings, err)
	}
	e := drain(rec)
	if len(e) != 1 || !strings.Contains(e[0], settings.ReasonMigrationWarned) ||
		!strings.Contains(e[0], "migration mig-pinned (uid uid-pinned) admitted with warnings:\n"+warnings[0]) ||
		!strings.Contains(e[0], settings.AnnotationMigrationUID+":uid-pinned") || !strings.Contains(e[0], settings.AnnotationMigration+":mig-pinned") {
		t.Errorf("events of a migration admitted with warnings %q: want one %s event quoting %q, naming mig-pinned and its UID", e, settings.ReasonMigrationWarned, warnings[0])
	}

	for _, tc := range []struct {
		rule, result string
		want         float64
	}{
		{RuleNone, ResultAllowed, 1},
		{string(settings.RuleFeasibleTarget), ResultDenied, 2}, // the dry run counts: it is a decision
		{string(settings.RuleVMIState), ResultDenied, 1},
		{string(settings.RuleFeasibleTarget), ResultWarned, 2},
		{RuleNone, ResultError, 0},
		{string(settings.RuleKubeVirtReady), ResultDenied, 0},
	} {
		if got := m.value(WebhookVMIMCreate, tc.rule, tc.result); got != tc.want {
			t.Errorf("vmim-create %s/%s = %v, want %v", tc.rule, tc.result, got, tc.want)
		}
	}

	// failurePolicy Ignore: what migranet cannot judge, it admits with a warning (an outage would).
	if w, err := v.ValidateCreate(ctx, &corev1.Pod{}); err != nil || len(w) == 0 {
		t.Errorf("a Pod sent as a migration: warnings %q, error %v; want admitted unchecked with a warning", w, err)
	}
	if got := m.value(WebhookVMIMCreate, RuleNone, ResultError); got != 1 {
		t.Errorf("vmim-create none/error = %v, want 1", got)
	}
}

func TestMigrationDeleteCounters(t *testing.T) {
	v, m, _, r := newTestValidator(t)
	ctx := context.Background()
	pc := postCopyVMI("uid-move")
	r.vmis[testVMI] = pc
	if _, err := v.ValidateDelete(ctx, vmim("move", testVMI, kubevirtv1.MigrationRunning)); err == nil {
		t.Fatal("cancelling a post-copy migration was admitted")
	}
	if _, err := v.ValidateDelete(ctx, vmim("other", "gone", kubevirtv1.MigrationSucceeded)); err != nil {
		t.Fatalf("deleting a finished migration: %v", err)
	}
	if got := m.value(WebhookVMIMDelete, string(settings.RulePostCopyCancel), ResultDenied); got != 1 {
		t.Errorf("vmim-delete postCopyCancel/denied = %v, want 1", got)
	}
	if got := m.value(WebhookVMIMDelete, RuleNone, ResultAllowed); got != 1 {
		t.Errorf("vmim-delete none/allowed = %v, want 1", got)
	}
}

func TestSettingDeleteAndUnchangedUpdateCounters(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	v := &SettingValidator{Metrics: m}
	ctx := context.Background()
	owned := &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}}
	if _, err := v.ValidateDelete(ctx, owned); err == nil {
		t.Fatal("deleting an owned setting was admitted")
	}
	if _, err := v.ValidateDelete(ctx, &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	labelled := owned.DeepCopy()
	labelled.Labels = map[string]string{"team": "net"}
	if _, err := v.ValidateUpdate(ctx, owned, labelled); err != nil {
		t.Fatal(err)
	}
	if got := m.value(WebhookSetting, RuleOwnedSetting, ResultDenied); got != 1 {
		t.Errorf("setting ownedSetting/denied = %v, want 1", got)
	}
	if got := m.value(WebhookSetting, RuleNone, ResultAllowed); got != 2 {
		t.Errorf("setting none/allowed = %v, want 2", got)
	}
}

func TestDecisionOutcome(t *testing.T) {
	for _, tc := range []struct {
		name               string
		ds                 []migrationcheck.Decision
		wantRule, wantRslt string
	}{
		{"nothing violated", nil, RuleNone, ResultAllowed},
		{"a warning only", []migrationcheck.Decision{{Rule: settings.RuleVMIState, Warn: true}}, string(settings.RuleVMIState), ResultWarned},
		{"the first denial decides over an earlier warning", []migrationcheck.Decision{
			{Rule: settings.RuleKubeVirtReady, Warn: true}, {Rule: settings.RuleNetworkReady, Deny: true}, {Rule: settings.RuleFeasibleTarget, Deny: true},
		}, string(settings.RuleNetworkReady), ResultDenied},
	} {
		rule, result := DecisionOutcome(tc.ds)
		if rule != tc.wantRule || result != tc.wantRslt {
			t.Errorf("%s: got %s/%s, want %s/%s", tc.name, rule, result, tc.wantRule, tc.wantRslt)
		}
	}
}

func TestMetricsSeriesAndSharing(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GatherAndCount(reg, MetricAdmissionDecisions)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(outcomes()) || n > 40 {
		t.Errorf("%d series at start, want the %d known outcomes (and a bounded number)", n, len(outcomes()))
	}
	b, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("registering twice: %v", err)
	}
	a.count(WebhookNAD, RuleActiveNetwork, ResultDenied)
	b.count(WebhookNAD, RuleActiveNetwork, ResultDenied)
	if got := a.value(WebhookNAD, RuleActiveNetwork, ResultDenied); got != 2 {
		t.Errorf("two instances on one registry: %v, want 2", got)
	}
	var none *Metrics
	none.count(WebhookNAD, RuleNone, ResultAllowed)
	none.decided(WebhookVMIMCreate, []migrationcheck.Decision{{Rule: settings.RuleVMIState, Deny: true}})
	none.simple(WebhookKubeVirt, RuleNetworkMismatch, []string{"w"}, nil)
}

func TestRefusalMessage(t *testing.T) {
	ds := []migrationcheck.Decision{
		{Rule: settings.RuleKubeVirtReady, Deny: true, Message: "KubeVirt is not ready"},
		{Rule: settings.RuleFeasibleTarget, Warn: true, Message: "ignored"},
		{Rule: settings.RuleNetworkReady, Deny: true, Message: "1 of 3 virt-handlers"},
	}
	got := RefusalMessage("m1", ds)
	want := "migration m1 refused by migranet kubevirtReady: KubeVirt is not ready; networkReady: 1 of 3 virt-handlers"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := RefusalMessage("m1", ds[1:2]); got != "" {
		t.Errorf("only a warning: got %q, want none", got)
	}
	long := RefusalMessage("m1", []migrationcheck.Decision{{Rule: settings.RuleFeasibleTarget, Deny: true, Message: strings.Repeat("é", 2000)}})
	if len(long) > maxEventMessage || !utf8.ValidString(long) || !strings.HasSuffix(long, "...") {
		t.Errorf("long message: %d bytes, valid UTF-8 %v, suffix %q", len(long), utf8.ValidString(long), long[len(long)-5:])
	}
}

func ptrTo[T any](v T) *T { return &v }

// BenchmarkCountDecision is the cost counting adds to each admission (compare with
// BenchmarkEvaluateCreate1000Nodes).
func BenchmarkCountDecision(b *testing.B) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ds := []migrationcheck.Decision{{Rule: settings.RuleFeasibleTarget, Deny: true}}
	b.ReportAllocs()
	for b.Loop() {
		m.decided(WebhookVMIMCreate, ds)
	}
}
