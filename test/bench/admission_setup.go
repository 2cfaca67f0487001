package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/webhook"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// The cluster both admission cases run against.
const (
	admNodes     = 1000
	admVMIs      = 5000
	admInFlight  = 10 // one VMIM in admInFlight is in flight (Running, pre-copy)
	benchNS      = "bench"
	benchNetwork = `{"clusterNetwork":"migration","vlan":100,"range":"10.100.0.0/16","mtu":9000}`
	poolLabel    = "bench.migranet.io/pool" // the hard VMI's nodeSelector: pool=gold
	zoneLabel    = "bench.migranet.io/zone" // the hard VMIM's addedNodeSelector: zone=z1
	rackLabel    = "bench.migranet.io/rack" // the hard VMI's required node affinity: rack in (r1)
	easySource   = "n0501"                  // carries the cluster network (node i%7 == 3 does not)
	hardSource   = "n0996"
)

// benchNode is node i of the hard case: every node but the last fails exactly one constraint of
// the hard migration (in turn: no pool label, cordoned, no zone label, no cluster network, a taint
// the VMI does not tolerate, a rack its required node affinity excludes, no memory left), so only
// the last node in name order, the order admission walks them, can take it; that one carries the
// taint the VMI tolerates. The easy migration (no constraints) fits the first node.
func benchNode(i int) cluster.NodeSpec {
	s := cluster.NodeSpec{Name: fmt.Sprintf("n%04d", i), ClusterNetworks: []string{"migration"},
		Labels: map[string]string{poolLabel: "gold", zoneLabel: "z1", rackLabel: "r1"}}
	if i == admNodes-1 {
		s.Taints = []corev1.Taint{tolerated}
		return s
	}
	switch i % 7 {
	case 0:
		delete(s.Labels, poolLabel)
	case 1:
		s.Unschedulable = true
	case 2:
		delete(s.Labels, zoneLabel)
	case 3:
		s.ClusterNetworks = nil
	case 4:
		s.Taints = []corev1.Taint{{Key: "bench.migranet.io/noisy", Effect: corev1.TaintEffectNoSchedule}}
	case 5:
		s.Labels[rackLabel] = "r2"
	}
	return s
}

// full reports whether node i is the one its pods leave no memory on (filler pods, see populate).
func full(i int) bool { return i != admNodes-1 && i%7 == 6 }

// tolerated is the taint the hard VMI tolerates.
var tolerated = corev1.Taint{Key: "bench.migranet.io/dedicated", Value: "vm", Effect: corev1.TaintEffectNoSchedule}

// populate creates the nodes, 5,000 VMIs with one finished or in-flight VMIM each, the two VMIs
// the cases migrate, a ready KubeVirt CR and the migration network setting.
func populate(ctx context.Context, c *cluster.Cluster) error {
	if err := cluster.BootstrapKubeVirt(ctx, c.Client); err != nil {
		return err
	}
	kv := &kubevirtv1.KubeVirt{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: cluster.KubeVirtName}, kv); err != nil {
		return err
	}
	kv.Status.Conditions = []kubevirtv1.KubeVirtCondition{{Type: kubevirtv1.KubeVirtConditionAvailable, Status: corev1.ConditionTrue, Reason: settings.KubeVirtReadyReason}}
	if err := c.Client.Status().Update(ctx, kv); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}); err != nil {
		return err
	}
	if err := parallel(admNodes, 16, func(i int) error { return c.Client.Create(ctx, cluster.NodeObject(benchNode(i))) }); err != nil {
		return err
	}
	if err := parallel(admVMIs, 16, func(i int) error {
		name := fmt.Sprintf("vm%05d", i)
		if err := c.Client.Create(ctx, framework.VMI(benchNS, name, fmt.Sprintf("n%04d", i%admNodes), nil)); err != nil {
			return err
		}
		vmim := framework.VMIM(benchNS, fmt.Sprintf("old%05d", i), name, nil)
		if err := c.Client.Create(ctx, vmim); err != nil {
			return err
		}
		vmim.Status.Phase = kubevirtv1.MigrationSucceeded
		if i%admInFlight == 0 {
			vmim.Status.Phase = kubevirtv1.MigrationRunning
		}
		if err := c.Client.Status().Update(ctx, vmim); err != nil {
			return err
		}
		if node, ok := budgetTarget(i); ok {
			return c.Client.Create(ctx, budgetTargetPod(vmim, node))
		}
		return nil
	}); err != nil {
		return err
	}
	if err := createRunningVMI(ctx, c.Client, "easy", easySource, nil, nil); err != nil {
		return err
	}
	if err := createHardVMI(ctx, c.Client); err != nil {
		return err
	}
	// Filler pods leave no memory on every seventh node (the nodes' 256Gi, kwok runs them).
	var fullNodes []int
	for i := range admNodes {
		if full(i) {
			fullNodes = append(fullNodes, i)
		}
	}
	if err := parallel(len(fullNodes), 16, func(j int) error {
		node := fmt.Sprintf("n%04d", fullNodes[j])
		return c.Client.Create(ctx, benchPod("filler-"+node, node, nil, "1", "256Gi"))
	}); err != nil {
		return err
	}
	// The VMI of the in-flight migration the delete reviews cancel: in pre-copy, so cancelling is allowed.
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: "vm00010"}, vmi); err != nil {
		return err
	}
	vmi.Status = kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "n0010",
		MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{Mode: kubevirtv1.MigrationPreCopy, SourceNode: "n0010", TargetNode: "n0999"}}
	if err := c.Client.Update(ctx, vmi); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationNetwork}, Value: benchNetwork}); err != nil {
		return err
	}
	all := make([]cluster.NodeSpec, admNodes)
	for i := range all {
		all[i] = benchNode(i)
	}
	return cluster.CreateNodes(ctx, c.Client, all) // waits until kwok reports every node Ready
}

// createHardVMI creates the hard case's VMI (nodeSelector pool=gold, the tolerated taint's
// toleration, required node affinity rack in (r1)) and its virt-launcher pod on hardSource, whose
// requests the target pod's are.
func createHardVMI(ctx context.Context, c client.Client) error {
	vmi := framework.VMI(benchNS, "hard", hardSource, map[string]string{poolLabel: "gold"})
	vmi.Spec.Tolerations = []corev1.Toleration{{Key: tolerated.Key, Operator: corev1.TolerationOpEqual, Value: tolerated.Value, Effect: tolerated.Effect}}
	vmi.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: rackLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}}}}}
	vmi.Status = kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: hardSource}
	if err := c.Create(ctx, vmi); err != nil {
		return err
	}
	labels := map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: string(vmi.UID)}
	return c.Create(ctx, benchPod("virt-launcher-hard", hardSource, labels, "1", "2Gi"))
}

// benchPod is a pod bound to node (no scheduler involved) requesting cpu and memory.
func benchPod(name, node string, labels map[string]string, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "bench", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func createRunningVMI(ctx context.Context, c client.Client, name, node string, sel map[string]string, ms *kubevirtv1.VirtualMachineInstanceMigrationState) error {
	vmi := framework.VMI(benchNS, name, node, sel)
	vmi.Status = kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node, MigrationState: ms}
	return c.Create(ctx, vmi) // the VMI CRD has no status subresource: status is written with the object
}

// readySnapshot is what the network controller publishes once every node is on the network.
func readySnapshot() (*health.Snapshot, error) {
	m, errs, _ := settings.ParseNetwork(benchNetwork, field.NewPath("value"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	h := m.Hash()
	eligible := admNodes
	return &health.Snapshot{Configured: true, Hash: h, AppliedHash: h, Network: settings.NADName(h), ClusterNetwork: m.ClusterNetwork,
		Eligible: eligible, Attached: eligible, Ready: true, Reason: "AllNodesAttached"}, nil
}

func parallel(n, workers int, job func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := job(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// serveWebhooks runs migranet's webhooks, with the manager's own cache options and a Ready
// migration network snapshot, and a no-op webhook on one TLS server on loopback, and waits until
// the caches hold everything populate created.
func serveWebhooks(ctx context.Context, c *cluster.Cluster) (string, []byte, func(), error) {
	certDir := filepath.Join(c.Dir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", nil, nil, err
	}
	kp, err := c.CA.Issue("migranet-bench", nil, "127.0.0.1")
	if err != nil {
		return "", nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), kp.CertPEM, 0o600); err != nil {
		return "", nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), kp.KeyPEM, 0o600); err != nil {
		return "", nil, nil, err
	}
	scheme, err := clusterread.NewScheme()
	if err != nil {
		return "", nil, nil, err
	}
	snap, err := readySnapshot()
	if err != nil {
		return "", nil, nil, err
	}
	port := cluster.FreePort()
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
		Cache:         webhook.CacheOptions(cluster.KubeVirtNamespace, nil),
	})
	if err != nil {
		return "", nil, nil, err
	}
	pods, err := migrationcheck.NewPodCache(mgr)
	if err != nil {
		return "", nil, nil, err
	}
	state, err := webhook.SetupState(ctx, mgr, webhook.Options{KubeVirtNamespace: cluster.KubeVirtNamespace, Snapshots: health.NewStore(snap), Pods: pods})
	if err != nil {
		return "", nil, nil, err
	}
	// The hard case with the probe agents' results: the same validator over the same informer
	// state, reading a PathStore that holds every node's fresh report.
	paths := &health.PathStore{}
	paths.Publish(benchPaths(snap.Network, time.Now()))
	if err := ctrl.NewWebhookManagedBy(mgr).For(&kubevirtv1.VirtualMachineInstanceMigration{}).
		WithValidator(&webhook.MigrationValidator{State: state.WithPaths(paths)}).WithValidatorCustomPath(pathsPath).Complete(); err != nil {
		return "", nil, nil, err
	}
	// The steering webhook with a failing pair of the hard source's, and its ceiling: a pod
	// handler that decodes the pod and admits it unchanged, served on the same server.
	spaths := &health.PathStore{}
	spaths.Publish(steerPaths(snap.Network, time.Now()))
	decoder := admission.NewDecoder(mgr.GetScheme())
	mgr.GetWebhookServer().Register(podSteerPath, &ctrlwebhook.Admission{Handler: &webhook.TargetSteerer{State: state.WithPaths(spaths), Decoder: decoder}})
	// The same steering with a budget: 50 nodes at their inbound limit, preferred against.
	mgr.GetWebhookServer().Register(podBudgetPath, &ctrlwebhook.Admission{Handler: &webhook.TargetSteerer{State: state.WithPaths(spaths).WithPolicy(budgetPolicy()), Decoder: decoder}})
	mgr.GetWebhookServer().Register(podNoopPath, &ctrlwebhook.Admission{Handler: noopPodHandler{decoder: decoder}})
	// The ceiling: a validator for the same kind that admits everything, registered and served
	// exactly as migranet's are (the builder's request logger and panic recovery, decoding).
	if err := ctrl.NewWebhookManagedBy(mgr).For(&kubevirtv1.VirtualMachineInstanceMigration{}).WithValidator(noopValidator{}).
		WithValidatorCustomPath(noopPath).Complete(); err != nil {
		return "", nil, nil, err
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = mgr.Start(mctx); close(done) }()
	fail := func(err error) (string, []byte, func(), error) { stop(); <-done; return "", nil, nil, err }
	if !mgr.GetCache().WaitForCacheSync(ctx) || !pods.WaitForCacheSync(ctx) {
		return fail(fmt.Errorf("caches did not sync"))
	}
	// Synced means listed; wait until the lists hold what populate made.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, vmis, vmims, s := &corev1.NodeList{}, &kubevirtv1.VirtualMachineInstanceList{}, &kubevirtv1.VirtualMachineInstanceMigrationList{}, &v1beta1.Setting{}
		for _, l := range []client.ObjectList{nodes, vmis, vmims} {
			if err := mgr.GetCache().List(ctx, l); err != nil {
				return false, err
			}
		}
		if err := mgr.GetCache().Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
			return false, nil
		}
		podList := &corev1.PodList{}
		if err := pods.List(ctx, podList); err != nil {
			return false, err
		}
		return len(nodes.Items) == admNodes && len(vmis.Items) == admVMIs+2 && len(vmims.Items) == admVMIs && s.Value == benchNetwork &&
			len(podList.Items) >= 1+(admNodes-1)/7+budgetInFlight, nil
	})
	if err != nil {
		return fail(fmt.Errorf("the cache never held the populated objects: %w", err))
	}
	return fmt.Sprintf("https://127.0.0.1:%d", port), c.CA.CertPEM, func() { stop(); <-done }, nil
}

// reviews returns the bodies one case cycles through: three creates of a migration of vmiName
// (with addedNodeSelector added) and one cancel of an in-flight pre-copy migration.
func reviews(vmiName string, added map[string]string) ([][]byte, error) {
	create := framework.VMIM(benchNS, "move-"+vmiName, vmiName, added)
	cancel := framework.VMIM(benchNS, "old00010", "vm00010", nil)
	cancel.Status.Phase = kubevirtv1.MigrationRunning
	c, err := reviewBody(admissionv1.Create, create)
	if err != nil {
		return nil, err
	}
	d, err := reviewBody(admissionv1.Delete, cancel)
	if err != nil {
		return nil, err
	}
	return [][]byte{c, c, c, d}, nil
}

func reviewBody(op admissionv1.Operation, vmim *kubevirtv1.VirtualMachineInstanceMigration) ([]byte, error) {
	vmim.TypeMeta = metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"}
	raw, err := json.Marshal(vmim)
	if err != nil {
		return nil, err
	}
	req := &admissionv1.AdmissionRequest{
		UID: types.UID("bench"), Operation: op, Namespace: benchNS, Name: vmim.Name,
		Kind:     metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"},
		Resource: metav1.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"},
	}
	if op == admissionv1.Delete {
		req.OldObject = runtime.RawExtension{Raw: raw}
	} else {
		req.Object = runtime.RawExtension{Raw: raw}
	}
	return json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
}

// noopPath serves noopValidator; pathsPath migranet's VMIM validator judging the probe results of
// benchPaths.
const (
	noopPath  = "/noop"
	pathsPath = "/validate-paths"
)

// benchPaths is the probe agents' results of nad as every node's agent would report them at now:
// each fresh (a round just completed, a long interval so that they stay fresh through the run),
// and three failing pairs, none of them the hard source's.
func benchPaths(nad string, now time.Time) *health.PathHealth {
	network := settings.NADRef(cluster.KubeVirtNamespace, nad)
	failing := map[int]v1beta1.PeerPath{100: {Node: "n0200", Reason: v1beta1.PathMTU, Largest: 1500},
		300: {Node: "n0400", Reason: v1beta1.PathUnreachable}, 500: {Node: "n0600", Reason: v1beta1.PathOneWay}}
	reports := make([]*v1beta1.PathReport, admNodes)
	for i := range reports {
		r := &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%04d", i)}, Network: network, MTU: 9000,
			IntervalSeconds: 3600, Since: metav1.NewMicroTime(now.Add(-time.Hour)),
			LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-time.Second)), Completed: metav1.NewMicroTime(now), Peers: admNodes - 1}}
		if f, ok := failing[i]; ok {
			r.Failing, r.LastRound.Failing = []v1beta1.PeerPath{f}, 1
		}
		reports[i] = r
	}
	return health.Paths(network, reports)
}

// noopValidator admits everything.
type noopValidator struct{}

func (noopValidator) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (noopValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (noopValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
