package statuswrite

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricReconcileSteps is the name of the counter of controller reconcile steps.
const MetricReconcileSteps = "migranet_reconcile_total"

// Values of the result label of MetricReconcileSteps.
const (
	StepSuccess = "success"
	StepError   = "error"
)

// Metrics counts reconcile steps in MetricReconcileSteps{controller,step,result}. Both migranet
// controllers share the family (netcontroller wraps it); label values are fixed constants, never
// object names. A nil *Metrics counts nothing.
type Metrics struct {
	steps *prometheus.CounterVec
}

// NewMetrics creates the reconcile counter and registers it with reg (nil: not registered). A
// counter registered before, by another Metrics on the same registry, is reused.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	steps, err := RegisterOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricReconcileSteps,
		Help: "Reconcile steps run by migranet's controllers, by controller, step and result (success or error).",
	}, []string{"controller", "step", "result"}))
	if err != nil {
		return nil, err
	}
	return &Metrics{steps: steps}, nil
}

// Step counts one run of step by controller: a success when err is nil, else an error.
func (m *Metrics) Step(controller, step string, err error) {
	if m == nil {
		return
	}
	result := StepSuccess
	if err != nil {
		result = StepError
	}
	m.steps.WithLabelValues(controller, step, result).Inc()
}

// Init creates the series of each step with zero counts, so that rate() and increase() see a
// step's first error as a change from zero rather than as a new series.
func (m *Metrics) Init(controller string, steps ...string) {
	if m == nil {
		return
	}
	for _, s := range steps {
		m.steps.WithLabelValues(controller, s, StepSuccess)
		m.steps.WithLabelValues(controller, s, StepError)
	}
}

// RegisterOrReuse registers c with reg and returns it; when an equal collector is already
// registered (another instance built the same metric, as tests do), it returns that one instead so
// that every instance feeds the exported series. A nil reg leaves c unregistered.
func RegisterOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
		return c, fmt.Errorf("a collector of another type is registered for the same metric: %w", err)
	}
	return c, fmt.Errorf("registering metric: %w", err)
}
