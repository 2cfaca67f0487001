package rolling

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// watch keeps sending what users and admins send, and reading what migranet reports, while one
// release replaces another; every answer lands in one of its counts.
type watch struct {
	mu sync.Mutex
	// Dry-run migration creates: a feasible one admitted, a pinned one refused by migranet's
	// feasibleTarget; anything else is wrong.
	admitted, refused int
	// Real migrations that virt-controller drove to Succeeded; anything else is wrong.
	migrated int
	// The pod asking for the migration NAD, refused by the guard policy; the invalid setting
	// value, refused by migranet's setting webhook naming the field.
	guarded, validated int
	wrong              []string
	// Samples of the setting's Healthy and Ready conditions ("Healthy=True/PathsVerified": n).
	conditions map[string]int
	// Moments Healthy was False or Ready not True (or Healthy Unknown, when unknownFlaps).
	flaps []string
	// unknownFlaps counts Healthy Unknown as a flap: agents of a release that resume their node's
	// report (issue 53) keep the verdict through their own restart.
	unknownFlaps bool

	stop chan struct{}
	wg   sync.WaitGroup
}

func (w *watch) add(wrong string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wrong = append(w.wrong, time.Now().Format("15:04:05.000")+" "+wrong)
}

func (w *watch) count(n *int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*n++
}

// loop runs step every period until the watch stops.
func (w *watch) loop(period time.Duration, step func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer GinkgoRecover()
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			step()
			select {
			case <-w.stop:
				return
			case <-time.After(period):
			}
		}
	}()
}

// startWatch starts every loop: dry-run creates over feasible and pinned, real migrations of
// movers one after another, the guard and setting probes, the condition reader.
// label (a DNS label) goes into the names of the migrations it creates, one per watch: KubeVirt
// keeps finished migrations, and a name reused is refused as already existing.
func startWatch(ctx context.Context, label, ns, nad string, feasible, pinned, movers []string, unknownFlaps bool) *watch {
	w := &watch{conditions: map[string]int{}, stop: make(chan struct{}), unknownFlaps: unknownFlaps}
	dry := func(name string, feasible bool) {
		n := 0
		w.loop(150*time.Millisecond, func() {
			n++
			w.dryRun(ctx, ns, name, fmt.Sprintf("dry-%s-%s-%d", label, name, n), feasible)
		})
	}
	for _, name := range feasible {
		dry(name, true)
	}
	for _, name := range pinned {
		dry(name, false)
	}
	for _, name := range movers {
		round := 0
		w.loop(100*time.Millisecond, func() {
			round++
			w.migrate(ctx, ns, name, fmt.Sprintf("live-%s-%s-%03d", label, name, round))
		})
	}
	w.loop(300*time.Millisecond, func() { w.guard(ctx, ns, nad) })
	w.loop(300*time.Millisecond, func() { w.validate(ctx) })
	w.loop(250*time.Millisecond, func() { w.readConditions(ctx) })
	return w
}

// finish stops every loop and waits for them.
func (w *watch) finish() {
	close(w.stop)
	w.wg.Wait()
}

func (w *watch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var cond []string
	for k, v := range w.conditions {
		cond = append(cond, fmt.Sprintf("%s ×%d", k, v))
	}
	sort.Strings(cond)
	return fmt.Sprintf("%d feasible admitted, %d pinned refused, %d real migrations succeeded, %d guard refusals, %d invalid values refused, %d wrong, %d flaps; conditions read: %s",
		w.admitted, w.refused, w.migrated, w.guarded, w.validated, len(w.wrong), len(w.flaps), strings.Join(cond, ", "))
}

// dryRun sends one server-side dry-run migration of vmi.
func (w *watch) dryRun(ctx context.Context, ns, vmi, name string, feasible bool) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := f.Client.Create(rctx, framework.VMIM(ns, name, vmi, nil), client.DryRunAll)
	switch {
	case err == nil && feasible:
		w.count(&w.admitted)
	case err != nil && !feasible && apierrors.IsInvalid(err) && strings.Contains(err.Error(), "migranet feasibleTarget"):
		w.count(&w.refused)
	default:
		w.add(fmt.Sprintf("dry-run migration of %s (feasible=%t): %v", vmi, feasible, err))
	}
}

// migrate creates a real migration of vmi and waits until it ends; one that fails, or is refused,
// is wrong.
func (w *watch) migrate(ctx context.Context, ns, vmi, name string) {
	if err := f.Client.Create(ctx, framework.VMIM(ns, name, vmi, nil)); err != nil {
		w.add(fmt.Sprintf("migration %s of %s refused: %v", name, vmi, err))
		return
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		m := &kubevirtv1.VirtualMachineInstanceMigration{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err == nil {
			switch m.Status.Phase {
			case kubevirtv1.MigrationSucceeded:
				w.count(&w.migrated)
				return
			case kubevirtv1.MigrationFailed:
				w.add(fmt.Sprintf("migration %s of %s failed: %+v", name, vmi, m.Status.Conditions))
				return
			}
		}
		select {
		case <-w.stop:
			// The watch ends: this migration still counts once it ends.
		case <-time.After(200 * time.Millisecond):
		}
	}
	w.add(fmt.Sprintf("migration %s of %s did not end in 90 s", name, vmi))
}

// guard dry-runs a pod asking for the migration NAD: the guard policy must refuse it, naming it.
func (w *watch) guard(ctx context.Context, ns, nad string) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "intruder-",
			Annotations: map[string]string{"k8s.v1.cni.cncf.io/networks": cluster.KubeVirtNamespace + "/" + nad}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	err := f.Client.Create(ctx, pod, client.DryRunAll)
	if err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), nad) && strings.Contains(err.Error(), "carries live migrations only") {
		w.count(&w.guarded)
		return
	}
	w.add(fmt.Sprintf("pod asking for %s: %v (want the guard's refusal)", nad, err))
}

// invalidValue is the migration network with a VLAN no switch carries.
const invalidValue = `{"clusterNetwork":"migration","vlan":4095,"range":"192.168.100.0/24"}`

// validate dry-runs a patch of the setting to an invalid value: migranet's setting webhook must
// refuse it on value.vlan.
func (w *watch) validate(ctx context.Context) {
	s := &v1beta1.Setting{}
	s.Name = v1beta1.MigrationNetwork
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"value":%q}`, invalidValue)))
	err := f.Client.Patch(ctx, s, patch, client.DryRunAll)
	if err != nil && apierrors.IsInvalid(err) && strings.Contains(err.Error(), "value.vlan") {
		w.count(&w.validated)
		return
	}
	w.add(fmt.Sprintf("invalid value %s: %v (want migranet's refusal on value.vlan)", invalidValue, err))
}

// samples counts the condition readings so far (one Healthy and one Ready a reading).
func (w *watch) samples() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.conditions {
		n += c
	}
	return n / 2
}

// past waits until the watch has read the conditions n more times (it reads them every 250 ms):
// the watch goes on a little past a rollout, measured in readings, not in time slept.
func (w *watch) past(ctx context.Context, n int) {
	GinkgoHelper()
	from := w.samples()
	Eventually(w.samples).WithContext(ctx).WithTimeout(framework.Long).Should(BeNumerically(">=", from+n))
}

// readConditions samples Healthy and Ready; Healthy False (or Unknown, see unknownFlaps) or Ready
// not True is a flap.
func (w *watch) readConditions(ctx context.Context) {
	s := &v1beta1.Setting{}
	if err := f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		w.add("reading the setting: " + err.Error())
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, typ := range []string{v1beta1.ConditionHealthy, v1beta1.ConditionReady} {
		c := meta.FindStatusCondition(s.Status.Conditions, typ)
		if c == nil {
			w.flaps = append(w.flaps, time.Now().Format("15:04:05.000")+" "+typ+" absent")
			continue
		}
		w.conditions[fmt.Sprintf("%s=%s/%s", typ, c.Status, c.Reason)]++
		healthyFlap := c.Status == metav1.ConditionFalse || w.unknownFlaps && c.Status == metav1.ConditionUnknown
		if (typ == v1beta1.ConditionHealthy && healthyFlap) || (typ == v1beta1.ConditionReady && c.Status != metav1.ConditionTrue) {
			w.flaps = append(w.flaps, fmt.Sprintf("%s %s=%s/%s: %s", time.Now().Format("15:04:05.000"), typ, c.Status, c.Reason, c.Message))
		}
	}
}
