package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// memState is a migrationcheck.State over objects held in memory: the webhook's own rules judge
// the same cluster the fake client serves to markHarvesterOffers.
type memState struct {
	vmi   *kubevirtv1.VirtualMachineInstance
	nodes []*corev1.Node
	pods  migrationcheck.PodList
}

func (s *memState) VMI(context.Context, string, string) (*kubevirtv1.VirtualMachineInstance, error) {
	return s.vmi, nil
}

func (s *memState) MigrationsOf(context.Context, string, string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error) {
	return nil, nil
}

func (s *memState) KubeVirt(context.Context) (*kubevirtv1.KubeVirt, error) {
	return checktest.ReadyKubeVirt(), nil
}

func (s *memState) Settings(context.Context) (*migrationcheck.SettingsView, error) {
	return &migrationcheck.SettingsView{Hash: checktest.Hash}, nil
}

func (s *memState) Nodes(context.Context) (*migrationcheck.NodeSet, error) {
	return &migrationcheck.NodeSet{Nodes: s.nodes}, nil
}

func (s *memState) Pods(context.Context) (migrationcheck.PodView, error)     { return s.pods, nil }
func (s *memState) Network() *health.Snapshot                                { return checktest.ReadySnapshot() }
func (s *memState) Paths(context.Context) *health.PathHealth                 { return nil }
func (s *memState) Traffic(context.Context) (*migrationcheck.Traffic, error) { return nil, nil }

// harvesterScene is a Harvester cluster: VMI vm runs on node-0, its launcher pod carries
// KubeVirt's node selector (kubevirt.io/schedulable=true); node-1 is not Ready, node-2 lacks the
// migration cluster network, node-3 is cordoned, node-4 is fine, node-5 is being drained by
// Harvester (annotation only), witness is a witness node virt-handler labelled schedulable. The
// VMI's old pod (Succeeded) and another VMI's pod are there too.
func harvesterScene() (*kubevirtv1.VirtualMachineInstance, []*corev1.Node, []*corev1.Pod) {
	vmi := checktest.VMI("node-0", nil)
	vmi.UID = "vmi-uid"
	vmi.Status.Phase = kubevirtv1.Running
	node := func(name string, opts ...checktest.NodeOpt) *corev1.Node {
		return checktest.Node(name, append([]checktest.NodeOpt{checktest.WithLabels(corev1.LabelHostname, name)}, opts...)...)
	}
	drain := func(n *corev1.Node) {
		n.Annotations = map[string]string{harvestermode.AnnotationDrainRequested: "true"}
	}
	nodes := []*corev1.Node{
		node("node-0"), node("node-1", checktest.NotReady), node("node-2", checktest.WithoutLabel(settings.ClusterNetworkLabelPrefix+checktest.CN)),
		node("node-3", checktest.Cordoned), node("node-4"), node("node-5", drain), node("witness", checktest.WithLabels(settings.WitnessLabel, "true")),
	}
	pod := func(name, uid, onNode string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: checktest.NS, Name: name,
				Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: uid}},
			Spec:   corev1.PodSpec{NodeName: onNode, NodeSelector: map[string]string{kubevirtv1.NodeSchedulable: "true", "only": onNode}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	launcher := pod("virt-launcher-vm-a", "vmi-uid", "node-0", corev1.PodRunning)
	delete(launcher.Spec.NodeSelector, "only")
	// The others select one node each (label only=<node>, which no node carries): read instead of
	// the launcher, they would offer nothing.
	return vmi, nodes, []*corev1.Pod{launcher, pod("virt-launcher-vm-old", "vmi-uid", "node-9", corev1.PodSucceeded), pod("virt-launcher-other", "other-uid", "node-4", corev1.PodRunning)}
}

func fakeReader(t *testing.T, vmi *kubevirtv1.VirtualMachineInstance, nodes []*corev1.Node, pods []*corev1.Pod, funcs *interceptor.Funcs) client.WithWatch {
	t.Helper()
	scheme, err := clusterread.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	if vmi != nil {
		b = b.WithObjects(vmi)
	}
	for _, n := range nodes {
		b = b.WithObjects(n)
	}
	for _, p := range pods {
		b = b.WithObjects(p)
	}
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func offersOf(nodes []migrationcheck.NodeVerdict) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		switch {
		case n.HarvesterOffers == nil:
			out[n.Node] = "unset"
		case *n.HarvesterOffers:
			out[n.Node] = "offers"
		default:
			out[n.Node] = "no"
		}
	}
	return out
}

// TestPreflightHarvesterOffers: on a Harvester cluster, preflight marks per node what Harvester's
// migrate action offers (read from the cluster as Harvester reads it) beside migranet's verdict (the
// webhook's rules on the same objects), and names every node Harvester offers that migranet
// refuses, with migranet's reason, in the table and in JSON. Faults caught, each seen to fail
// once: the marks copied from migranet's verdict instead of Harvester's filters; the VMI's
// pods listed by something else than kubevirt.io/created-by=<UID> (none found: Harvester would
// offer nothing); its old Succeeded pod counted as active; a line for a node Harvester offers that migranet accepts, or for
// a node migranet refuses that Harvester does not offer; the column or the lines missing; the
// JSON without harvesterOffers.
func TestPreflightHarvesterOffers(t *testing.T) {
	ctx := context.Background()
	vmi, nodes, pods := harvesterScene()
	res, err := migrationcheck.Preflight(ctx, &memState{vmi: vmi, nodes: nodes, pods: pods}, checktest.VMIM("", checktest.VMIName, ""), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if note := markHarvesterOffers(ctx, fakeReader(t, vmi, nodes, pods, nil), checktest.NS, checktest.VMIName, res); note != "" {
		t.Errorf("note %q, want none", note)
	}
	want := map[string]string{"node-0": "no", "node-1": "offers", "node-2": "offers", "node-3": "no", "node-4": "offers", "node-5": "no", "witness": "offers"}
	if d := gocmp.Diff(want, offersOf(res.Nodes)); d != "" {
		t.Fatalf("Harvester's offers (-want +got):\n%s\nnodes: %+v", d, res.Nodes)
	}

	r := preflightReport{Namespace: checktest.NS, VMI: checktest.VMIName, PreflightResult: res}
	var b bytes.Buffer
	if err := r.print(&b, "table"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range []string{
		"NODE            TARGET   HARVESTER OFFERS  WHY NOT\n",
		"node-1          no       yes               is not Ready\n",
		"node-3          no       no                is cordoned\n",
		"node-4          yes      yes",
		"node-5          yes      no",
		"Harvester's migrate action offers node-1, which migranet refuses: is not Ready\n" +
			"Harvester's migrate action offers node-2, which migranet refuses: does not carry the cluster network migration (label network.harvesterhci.io/migration=true)\n" +
			"Harvester's migrate action offers witness, which migranet refuses: does not run virt-handler (a witness node)\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("table lacks %q:\n%s", line, out)
		}
	}
	if n := strings.Count(out, "Harvester's migrate action offers "); n != 3 {
		t.Errorf("%d lines about Harvester's offers, want 3 (node-1, node-2, witness):\n%s", n, out)
	}

	b.Reset()
	if err := r.print(&b, "json"); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Nodes []struct {
			Node            string `json:"node"`
			HarvesterOffers *bool  `json:"harvesterOffers"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range decoded.Nodes {
		got[n.Node] = "unset"
		if n.HarvesterOffers != nil {
			got[n.Node] = map[bool]string{true: "offers", false: "no"}[*n.HarvesterOffers]
		}
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("JSON harvesterOffers (-want +got):\n%s\n%s", d, b.String())
	}
}

// TestPreflightHarvesterNoOffer: when Harvester's actions refuse the VMI before any node
// (ValidateVMMigratable, getVMIPod), every node is marked not offered and a line says why; when
// the VMI's pods cannot be read, nothing is marked (no column) and a line says so. Faults caught:
// a node left offered, or unmarked, while Harvester offers none; the reason not printed; a guess
// shown when the pods could not be read.
func TestPreflightHarvesterNoOffer(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		modify   func(vmi *kubevirtv1.VirtualMachineInstance, pods []*corev1.Pod) []*corev1.Pod
		funcs    *interceptor.Funcs
		note     string
		unmarked bool
	}{
		{name: "a migration's target pod: two active pods", modify: func(_ *kubevirtv1.VirtualMachineInstance, pods []*corev1.Pod) []*corev1.Pod {
			target := pods[0].DeepCopy()
			target.Name, target.Spec.NodeName, target.Status.Phase = "virt-launcher-vm-b", "node-4", corev1.PodPending
			return append(pods, target)
		}, note: "Harvester's migrate action offers no node: the VMI has 2 active pods ([virt-launcher-vm-a virt-launcher-vm-b])"},
		{name: "host devices", modify: func(vmi *kubevirtv1.VirtualMachineInstance, pods []*corev1.Pod) []*corev1.Pod {
			vmi.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "nic"}}
			return pods
		}, note: "Harvester's migrate action offers no node: the VMI has host (PCIe or USB) devices"},
		{name: "pods not readable", funcs: &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
			}
			return c.List(ctx, list, opts...)
		}}, note: "Harvester's offers are not shown: listing the VMI's pods: ", unmarked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vmi, nodes, pods := harvesterScene()
			if tc.modify != nil {
				pods = tc.modify(vmi, pods)
			}
			res, err := migrationcheck.Preflight(ctx, &memState{vmi: vmi, nodes: nodes, pods: pods}, checktest.VMIM("", checktest.VMIName, ""), "alice")
			if err != nil {
				t.Fatal(err)
			}
			note := markHarvesterOffers(ctx, fakeReader(t, vmi, nodes, pods, tc.funcs), checktest.NS, checktest.VMIName, res)
			if !strings.HasPrefix(note, tc.note) {
				t.Errorf("note %q, want one starting %q", note, tc.note)
			}
			for k, v := range offersOf(res.Nodes) {
				if (tc.unmarked && v != "unset") || (!tc.unmarked && v != "no") {
					t.Errorf("%s: %s", k, v)
				}
			}
			r := preflightReport{Namespace: checktest.NS, VMI: checktest.VMIName, HarvesterNote: note, PreflightResult: res}
			var b bytes.Buffer
			if err := r.print(&b, "table"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "\n"+note+"\n") || strings.Contains(b.String(), "which migranet refuses") ||
				strings.Contains(b.String(), "HARVESTER OFFERS") == tc.unmarked {
				t.Errorf("table:\n%s", b.String())
			}
		})
	}
}

// TestHarvesterCluster: the column is shown in Harvester mode or where Harvester's Setting
// resource is served, not elsewhere. Faults caught, each seen to fail once: the column on every
// cluster; Harvester mode (status.source.kind) not recognised; a Harvester cluster with migranet
// outside Harvester mode (--harvester=off) not recognised.
func TestHarvesterCluster(t *testing.T) {
	ctx := context.Background()
	own := func(kind string) *v1beta1.Setting {
		s := &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}}
		if kind != "" {
			s.Status.Source = &v1beta1.NetworkSource{Kind: kind, Setting: harvestermode.SettingRef}
		}
		return s
	}
	served := meta.NewDefaultRESTMapper(nil)
	served.Add(harvestermode.SettingGVK, meta.RESTScopeRoot)
	tests := []struct {
		name   string
		own    *v1beta1.Setting
		mapper meta.RESTMapper
		want   bool
	}{
		{name: "plain KubeVirt, no setting", want: false},
		{name: "plain KubeVirt, migranet's own network", own: own(""), want: false},
		{name: "Harvester mode", own: own(v1beta1.SourceHarvester), want: true},
		{name: "Harvester's Setting served, migranet not in Harvester mode", own: own(""), mapper: served, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scheme, err := clusterread.NewScheme()
			if err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(scheme)
			if tc.own != nil {
				b = b.WithObjects(tc.own).WithStatusSubresource(tc.own)
			}
			if tc.mapper != nil {
				b = b.WithRESTMapper(tc.mapper)
			}
			c := b.Build()
			if tc.own != nil && tc.own.Status.Source != nil {
				// The fake stores status only through the status writer.
				if err := c.Status().Update(ctx, tc.own); err != nil {
					t.Fatal(err)
				}
			}
			if got, why := harvesterCluster(ctx, c); got != tc.want || why != "" {
				t.Errorf("harvesterCluster = %v, %q; want %v", got, why, tc.want)
			}
		})
	}
}
