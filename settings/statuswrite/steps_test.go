package statuswrite

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMetricsCountSteps(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Init("settings", "nad", "kubevirt")
	m.Step("settings", "nad", nil)
	m.Step("settings", "nad", nil)
	m.Step("settings", "kubevirt", errors.New("conflict"))
	want := `
# HELP migranet_reconcile_total Reconcile steps run by migranet's controllers, by controller, step and result (success or error).
# TYPE migranet_reconcile_total counter
migranet_reconcile_total{controller="settings",result="error",step="kubevirt"} 1
migranet_reconcile_total{controller="settings",result="error",step="nad"} 0
migranet_reconcile_total{controller="settings",result="success",step="kubevirt"} 0
migranet_reconcile_total{controller="settings",result="success",step="nad"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricReconcileSteps); err != nil {
		t.Error(err)
	}
}

func TestMetricsRegisteredTwiceShareTheCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("second registration: %v", err)
	}
	a.Step("settings", "status", nil)
	b.Step("settings", "status", nil)
	if got := testutil.ToFloat64(a.steps.WithLabelValues("settings", "status", StepSuccess)); got != 2 {
		t.Errorf("both instances should feed the registered series: got %v, want 2", got)
	}
}

func TestRegisterOrReuseRefusesAnotherType(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.GaugeOpts{Name: MetricReconcileSteps, Help: "Reconcile steps run by migranet's controllers, by controller, step and result (success or error)."}
	if _, err := RegisterOrReuse(reg, prometheus.NewGaugeVec(opts, []string{"controller", "step", "result"})); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("a gauge registered under the counter's name must be an error, not a silent unregistered counter")
	}
}

func TestMetricsNilAndUnregisteredAreSafe(t *testing.T) {
	var m *Metrics
	m.Step("settings", "nad", nil)
	m.Init("settings", "nad")
	u, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	u.Step("settings", "nad", nil)
	if got := testutil.ToFloat64(u.steps.WithLabelValues("settings", "nad", StepSuccess)); got != 1 {
		t.Errorf("unregistered counter: got %v, want 1", got)
	}
}

func TestConditionChanged(t *testing.T) {
	stored := []metav1.Condition{{Type: "Ready", Status: "False", Reason: "NodesNotAttached", Message: "1 of 3"}}
	for _, tc := range []struct {
		name string
		cond metav1.Condition
		want bool
	}{
		{"same status and reason, new message", metav1.Condition{Type: "Ready", Status: "False", Reason: "NodesNotAttached", Message: "2 of 3"}, false},
		{"new reason", metav1.Condition{Type: "Ready", Status: "False", Reason: "KubeVirtNotReady"}, true},
		{"new status", metav1.Condition{Type: "Ready", Status: "True", Reason: "NodesNotAttached"}, true},
		{"no stored condition of the type", metav1.Condition{Type: "IPCapacity", Status: "True", Reason: "Sufficient"}, true},
	} {
		if got := ConditionChanged(stored, tc.cond); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
