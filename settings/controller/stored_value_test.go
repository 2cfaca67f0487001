package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// A value stored while the webhook did not see it (migranet installed after it, or the webhook
// taken out of the chain) is judged by the settings controller as admission would judge it, with
// the same function over the same cluster, before anything is rendered from it.

// ctlSummaryA is ctlValueA's status.summary.
const ctlSummaryA = "migration untagged 192.168.100.0/24"

// ctlCN is the label that attaches a node to ctlValueA's cluster network "migration".
const ctlCN = settings.ClusterNetworkLabelPrefix + "migration"

// ctlNode is a node with the given labels (key=value pairs).
func ctlNode(name string, labels ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for _, kv := range labels {
		k, v, _ := strings.Cut(kv, "=")
		n.Labels[k] = v
	}
	return n
}

// attached is three nodes carrying the cluster network "migration".
func attached() []*corev1.Node {
	return []*corev1.Node{ctlNode("node-1", ctlCN+"=true"), ctlNode("node-2", ctlCN+"=true"), ctlNode("node-3", ctlCN+"=true")}
}

// configured returns the Configured condition and the setting's summary.
func (e *controllerEnv) configured() (*metav1.Condition, string) {
	e.t.Helper()
	s := &v1beta1.Setting{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		e.t.Fatal(err)
	}
	return meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionConfigured), s.Status.Summary
}

// create stores objects as they are.
func (e *controllerEnv) create(objs ...client.Object) {
	e.t.Helper()
	for _, o := range objs {
		if err := e.c.Create(context.Background(), o); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestControllerValidatesAStoredValue: what the controller makes of a stored value the webhook
// would refuse. An error in the value itself is never applied; an error that comes from the nodes
// (cluster network missing on a node, too few addresses for the nodes) blocks a value not applied
// yet, but never the value already in force: a node added later must not tear the network down.
// Nothing is half applied: no NAD is rendered and the KubeVirt CR keeps the network applied last.
// Catches: the controller rendering a NAD (or patching the CR) from a value admission refuses;
// the cluster-dependent checks skipped (or judged on another Cluster than the webhook's: witness
// nodes and KubeVirt's node placement ignored); an applied network torn down or reported invalid
// because a node joined without the cluster network; the empty value (rollback) refused; a
// message without the field, the fix or the network left in force, or without a bound.
func TestControllerValidatesAStoredValue(t *testing.T) {
	const badVLAN = `{"clusterNetwork":"migration","vlan":4095,"range":"192.168.100.0/24","mtu":100}`
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("10.0.%d.%d", i/250, i%250))
	}
	huge := fmt.Sprintf(`{"clusterNetwork":%q,"range":"192.168.100.0/24","exclude":[%s]}`, strings.Repeat("x", 5000), strings.Join(many, ","))
	for _, tc := range []struct {
		name     string
		nodes    []*corev1.Node
		selector map[string]string // the KubeVirt CR's workloads node selector
		applied  string            // a value applied first, with nodes as given
		later    []*corev1.Node    // nodes that join after it was applied
		edit     func(*v1beta1.Setting)

		reason      string
		network     string
		nads        []string
		hash        string
		message     []string // substrings of the condition's message
		notMessage  []string
		summary     string
		warningOnly bool // the edit emits exactly one Warning event
	}{
		{
			name: "an error in the value, nothing applied before", nodes: attached(),
			edit:   func(s *v1beta1.Setting) { s.Value = badVLAN },
			reason: ReasonInvalidValue, summary: "invalid", warningOnly: true,
			message: []string{"value.vlan", "between 0 (untagged) and 4094", "value.mtu", "migrations go on over the pod network"},
		},
		{
			name: "an error in the value keeps the network applied before", nodes: attached(), applied: ctlValueA,
			edit:   func(s *v1beta1.Setting) { s.Value = badVLAN },
			reason: ReasonInvalidValue, network: ctlNADA, nads: []string{ctlNADA}, hash: ctlHashA, summary: "invalid", warningOnly: true,
			message: []string{"value.vlan", ctlNADA + " stays in force"},
		},
		{
			name: "a value that does not parse", nodes: attached(), applied: ctlValueA,
			edit:   func(s *v1beta1.Setting) { s.Value = `{"clusterNetwork":"migration","range":` },
			reason: ReasonInvalidValue, network: ctlNADA, nads: []string{ctlNADA}, hash: ctlHashA, summary: "invalid", warningOnly: true,
			message: []string{"value"},
		},
		{
			name: "a new value whose cluster network a node lacks", nodes: attached(), applied: ctlValueA,
			later:  []*corev1.Node{ctlNode("node-4")},
			edit:   func(s *v1beta1.Setting) { s.Value = ctlValueB },
			reason: ReasonInvalidValue, network: ctlNADA, nads: []string{ctlNADA}, hash: ctlHashA, summary: "invalid", warningOnly: true,
			message:    []string{"value.clusterNetwork", "node-4", ctlCN + "=true", ctlNADA + " stays in force"},
			notMessage: []string{"node-1"},
		},
		{
			name:  "a node that joins without the cluster network leaves the applied network alone",
			nodes: attached(), applied: ctlValueA, later: []*corev1.Node{ctlNode("node-4")},
			edit:   func(s *v1beta1.Setting) { s.Labels = map[string]string{"touched": "yes"} },
			reason: ReasonApplied, network: ctlNADA, nads: []string{ctlNADA}, hash: ctlHashA, summary: ctlSummaryA,
		},
		{
			name:  "the applied value stored again by hand is not judged against the nodes either",
			nodes: attached(), applied: ctlValueA, later: []*corev1.Node{ctlNode("node-4")},
			edit:   func(s *v1beta1.Setting) { s.Value = ` {"clusterNetwork": "migration", "range": "192.168.100.0/24"}` },
			reason: ReasonApplied, network: ctlNADA, nads: []string{ctlNADA}, hash: ctlHashA, summary: ctlSummaryA,
		},
		{
			name: "too few addresses for the eligible nodes", nodes: attached(),
			edit: func(s *v1beta1.Setting) {
				s.Value = `{"clusterNetwork":"migration","range":"192.168.100.0/30","exclude":["192.168.100.1"]}`
			},
			reason: ReasonInvalidValue, summary: "invalid", warningOnly: true,
			message: []string{"value.range", "3 eligible nodes", "use a wider range"},
		},
		{
			name: "witness nodes and nodes outside KubeVirt's node placement need no cluster network",
			nodes: []*corev1.Node{
				ctlNode("node-1", ctlCN+"=true", "role=worker"),
				ctlNode("witness-1", settings.WitnessLabel+"=true", "role=worker"),
				ctlNode("infra-1"),
			},
			selector: map[string]string{"role": "worker"},
			edit:     func(s *v1beta1.Setting) { s.Value = ctlValueA },
			reason:   ReasonApplied, network: ctlNADA, nads: []string{ctlNADA}, hash: ctlHashA, summary: ctlSummaryA,
		},
		{
			name: "the empty value rolls back whatever the nodes", nodes: attached(), applied: ctlValueA,
			later:  []*corev1.Node{ctlNode("node-4")},
			edit:   func(s *v1beta1.Setting) { s.Value = "" },
			reason: ReasonDisabled, summary: "disabled",
		},
		{
			name: "a default in force is judged under default", nodes: attached(),
			edit:   func(s *v1beta1.Setting) { s.Default = badVLAN },
			reason: ReasonInvalidValue, summary: "invalid", warningOnly: true,
			message: []string{"default.vlan"}, notMessage: []string{"value.vlan"},
		},
		{
			name: "a default not in force is not the controller's business", nodes: attached(),
			edit:   func(s *v1beta1.Setting) { s.Value, s.Default = ctlValueA, badVLAN },
			reason: ReasonApplied, network: ctlNADA, nads: []string{ctlNADA}, hash: ctlHashA, summary: ctlSummaryA,
		},
		{
			name: "hundreds of problems give a bounded message", nodes: attached(),
			edit:   func(s *v1beta1.Setting) { s.Value = huge },
			reason: ReasonInvalidValue, summary: "invalid", warningOnly: true,
			message: []string{"value.clusterNetwork", "value.exclude[0]", "more problems not shown"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			for _, n := range tc.nodes {
				objs = append(objs, n)
			}
			e := newControllerEnv(t, objs...)
			if tc.selector != nil {
				kv := &kubevirtv1.KubeVirt{}
				if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: "kubevirt"}, kv); err != nil {
					t.Fatal(err)
				}
				kv.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: tc.selector}}
				if err := e.c.Update(context.Background(), kv); err != nil {
					t.Fatal(err)
				}
			}
			if tc.applied != "" {
				e.set(tc.applied)
				if c, _ := e.configured(); c == nil || c.Reason != ReasonApplied {
					t.Fatalf("setup: %s not applied: %+v", tc.applied, c)
				}
			}
			for _, n := range tc.later {
				e.create(n)
			}
			e.events()
			e.store(tc.edit)
			e.expect(tc.name, tc.network, tc.nads, tc.hash)
			c, summary := e.configured()
			if c == nil || c.Reason != tc.reason {
				t.Fatalf("Configured = %+v, want reason %s", c, tc.reason)
			}
			if want := metav1.ConditionStatus(map[bool]string{true: "False", false: "True"}[tc.reason == ReasonInvalidValue]); c.Status != want {
				t.Errorf("Configured status %s, want %s", c.Status, want)
			}
			if summary != tc.summary {
				t.Errorf("summary %q, want %q", summary, tc.summary)
			}
			for _, want := range tc.message {
				if !strings.Contains(c.Message, want) {
					t.Errorf("Configured message lacks %q:\n%s", want, c.Message)
				}
			}
			for _, unwanted := range tc.notMessage {
				if strings.Contains(c.Message, unwanted) {
					t.Errorf("Configured message names %q:\n%s", unwanted, c.Message)
				}
			}
			if len(c.Message) > settings.MaxMessage {
				t.Errorf("Configured message is %d bytes, more than %d", len(c.Message), settings.MaxMessage)
			}
			ev := e.events()
			if tc.warningOnly {
				if len(ev) != 1 || ev[0] != "Warning "+ReasonInvalidValue+" "+c.Message {
					t.Errorf("events %q, want one Warning %s with the condition's message", ev, ReasonInvalidValue)
				}
			} else {
				for _, x := range ev {
					if strings.HasPrefix(x, "Warning") {
						t.Errorf("unexpected warning event %q", x)
					}
				}
			}
			// Compare before every write: judging the same value again writes nothing and
			// emits nothing.
			if before, after := e.reconcile(); before != after {
				t.Errorf("a second reconcile wrote the setting (resourceVersion %s → %s)", before, after)
			}
			if ev := e.events(); len(ev) != 0 {
				t.Errorf("a second reconcile emitted %q", ev)
			}
		})
	}
}

// TestControllerAppliesAStoredValueOnceItIsValid: a value refused for the nodes is applied as soon
// as the nodes make it valid (here: the missing node gets the cluster network's label), and a value
// refused for itself as soon as it is fixed. Reconcile asks for no retry while the value is invalid:
// the watches on the setting, the nodes and the KubeVirt CR bring it back.
// Catches: an invalid value retried with backoff forever; a value that stays refused after the
// nodes were fixed (the verdict cached, or the nodes read once).
func TestControllerAppliesAStoredValueOnceItIsValid(t *testing.T) {
	e := newControllerEnv(t, ctlNode("node-1", ctlCN+"=true"), ctlNode("node-2"))
	ctx := context.Background()
	key := client.ObjectKey{Name: v1beta1.MigrationNetwork}
	e.store(func(s *v1beta1.Setting) { s.Value = ctlValueA })
	if c, _ := e.configured(); c == nil || c.Reason != ReasonInvalidValue || !strings.Contains(c.Message, "node-2") {
		t.Fatalf("Configured = %+v, want InvalidValue naming node-2", c)
	}
	e.expect("node-2 without the cluster network", "", nil, "")
	res, err := e.ctl.Reconcile(ctx, reconcile.Request{NamespacedName: key})
	if err != nil || !res.IsZero() {
		t.Errorf("Reconcile of an invalid value = %+v, %v; want no retry (the watches bring it back)", res, err)
	}

	n := &corev1.Node{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: "node-2"}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{ctlCN: "true"}
	if err := e.c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	e.expect("node-2 labelled", ctlNADA, []string{ctlNADA}, ctlHashA)

	e.set(`{"clusterNetwork":"migration","vlan":5000,"range":"10.77.0.0/24"}`)
	e.expect("vlan 5000", ctlNADA, []string{ctlNADA}, ctlHashA)
	e.set(ctlValueB)
	e.expect("fixed", ctlNADB, []string{ctlNADB}, ctlHashB)
	want := []string{"Warning " + ReasonInvalidValue, "Normal " + ReasonApplied, "Warning " + ReasonInvalidValue, "Normal " + ReasonApplied}
	var got []string
	for _, ev := range e.events() {
		f := strings.Fields(ev)
		got = append(got, f[0]+" "+f[1])
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
}
