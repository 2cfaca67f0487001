package sim

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ProbeAgentLabel selects the probe agent DaemonSet's pods (manifests/probe).
const ProbeAgentLabel = "app.kubernetes.io/name"

// ProbeAgentValue is ProbeAgentLabel's value on them.
const ProbeAgentValue = "migranet-probe"

// ProbeAgents stands in for the kubelet of the probe agent's pods: for each of the DaemonSet's pods
// that kwok runs on a node, it runs the real `migranet probe` process with the pod's arguments (and
// ExtraArgs after them), its environment (NODE_NAME, POD_NAMESPACE) and a token bound to the pod, as
// the kubelet mounts one (the API server adds the node's name to the identity, which the
// PathReport policy checks). The process runs on this machine's /proc, as the pod would with
// hostPID, and finds the virt-handler sandboxes' pause processes there. A deleted pod's process
// is killed; so is every process when the simulators stop.
type ProbeAgents struct {
	Client    client.Client
	Clientset kubernetes.Interface
	// Binary is the migranet binary; Server and CA reach the API server; Dir holds kubeconfigs
	// and logs (probe-<node>.log).
	Binary, Server, Dir string
	CA                  []byte
	ExtraArgs           []string

	// Unmeasured, when set, says why the nodes' networks are simulated: no agent process runs
	// then (there is no migration0 to probe from); each agent pod's PathReport says instead that
	// its paths are not measured (reportUnmeasured), so no status blames a missing agent.
	Unmeasured string

	mu         sync.Mutex
	images     map[string]string    // see Image
	unmeasured map[types.UID]string // agent pod → the network its NotMeasured report names
	procs      map[types.UID]*agentProc
	held       map[string]bool   // nodes whose agent is kept down (Hold)
	restarts   map[string]int    // per node, the agents restarted by their liveness probe
	why        map[string]string // per node, why its liveness probe last restarted it
	hangable   map[string]bool   // nodes whose agent runs where its rounds can be hung (Hangable)
}

type agentProc struct {
	node string
	cmd  *exec.Cmd
	done chan struct{}
}

// freePort is a loopback port free at the moment.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// probeReadiness is the kubelet's readiness probe of the agent (GET /readyz every 500 ms): the
// pod's Ready condition follows it, False from the start (kwok marks a new pod Ready at once),
// until the process ends.
func (a *ProbeAgents) probeReadiness(pod *corev1.Pod, port int, p *agentProc) {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	hc := &http.Client{Timeout: time.Second}
	known := ""
	for {
		ready := corev1.ConditionFalse
		if resp, err := hc.Get(url); err == nil {
			if resp.StatusCode == http.StatusOK {
				ready = corev1.ConditionTrue
			}
			resp.Body.Close()
		}
		if string(ready) != known {
			if err := a.setReady(context.Background(), pod, ready); err == nil {
				known = string(ready)
			}
		}
		select {
		case <-p.done:
			_ = a.setReady(context.Background(), pod, corev1.ConditionFalse)
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// setReady writes the pod's Ready and ContainersReady conditions.
func (a *ProbeAgents) setReady(ctx context.Context, pod *corev1.Pod, ready corev1.ConditionStatus) error {
	cur := &corev1.Pod{}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil || cur.UID != pod.UID {
		return err
	}
	patch := client.MergeFrom(cur.DeepCopy())
	for j := range cur.Status.Conditions {
		if c := &cur.Status.Conditions[j]; (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && c.Status != ready {
			c.Status, c.LastTransitionTime = ready, metav1.Now()
		}
	}
	return a.Client.Status().Patch(ctx, cur, patch)
}

// SetupWithManager registers the stand-in; every process is killed when the manager stops.
func (a *ProbeAgents) SetupWithManager(mgr ctrl.Manager) error {
	a.procs = map[types.UID]*agentProc{}
	a.held = map[string]bool{}
	a.unmeasured = map[types.UID]string{}
	if err := mgr.Add(ctrlRunnable(func(ctx context.Context) error {
		<-ctx.Done()
		a.mu.Lock()
		defer a.mu.Unlock()
		for uid, p := range a.procs {
			p.kill()
			delete(a.procs, uid)
		}
		return nil
	})); err != nil {
		return err
	}
	agents := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[ProbeAgentLabel] == ProbeAgentValue })
	return ctrl.NewControllerManagedBy(mgr).Named("sim-probe-kubelet").
		For(&corev1.Pod{}, builder.WithPredicates(agents)).
		Complete(a)
}

// Reconcile starts the process of a running agent pod, and kills the one of a pod going away.
func (a *ProbeAgents) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	err := a.Client.Get(ctx, req.NamespacedName, pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.procs[pod.UID]; err == nil && p != nil && pod.DeletionTimestamp != nil {
		p.kill()
		delete(a.procs, pod.UID)
	}
	if apierrors.IsNotFound(err) {
		a.killGone(ctx)
		return reconcile.Result{}, nil
	}
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return reconcile.Result{}, nil
	}
	if a.held[pod.Spec.NodeName] {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	if a.Unmeasured != "" {
		return a.reportUnmeasured(ctx, pod)
	}
	if p := a.procs[pod.UID]; p != nil && !p.exited() {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil // looks again: a crashed process is restarted
	}
	p, err := a.start(ctx, pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	a.procs[pod.UID] = p
	return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
}

// killGone kills the processes whose pods no longer exist (called with a.mu held).
func (a *ProbeAgents) killGone(ctx context.Context) {
	var pods corev1.PodList
	if err := a.Client.List(ctx, &pods, client.MatchingLabels{ProbeAgentLabel: ProbeAgentValue}); err != nil {
		return
	}
	live := map[types.UID]bool{}
	for i := range pods.Items {
		live[pods.Items[i].UID] = pods.Items[i].DeletionTimestamp == nil
	}
	for uid, p := range a.procs {
		if !live[uid] {
			p.kill()
			delete(a.procs, uid)
		}
	}
}

// start runs the pod's container as a process.
func (a *ProbeAgents) start(ctx context.Context, pod *corev1.Pod) (*agentProc, error) {
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("agent pod %s has no container", pod.Name)
	}
	kubeconfig, err := a.kubeconfig(ctx, pod)
	if err != nil {
		return nil, err
	}
	c := pod.Spec.Containers[0]
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, c.Args...), a.ExtraArgs...)
	args = append(args, fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", port))
	binary := a.Binary
	if b, ok := a.images[c.Image]; ok {
		binary = b
	}
	cmd := a.hangCommand(pod.Spec.NodeName, binary, args)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NODE_NAME="+pod.Spec.NodeName, "POD_NAMESPACE="+pod.Namespace)
	log, err := os.OpenFile(filepath.Join(a.Dir, "probe-"+pod.Spec.NodeName+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &agentProc{node: pod.Spec.NodeName, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	go a.probeReadiness(pod, port, p)
	if l, ok := livenessOf(c); ok {
		go l.watch(fmt.Sprintf("http://127.0.0.1:%d", port), p.done, func(why string) { a.restart(p, why) })
	}
	return p, nil
}

// Image says which binary a pod naming image runs, as the kubelet pulls the image a pod names: a
// DaemonSet rollout to a new image runs the new binary. Pods of other images run Binary.
func (a *ProbeAgents) Image(image, binary string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.images == nil {
		a.images = map[string]string{}
	}
	a.images[image] = binary
}

// kubeconfig writes a kubeconfig with a token of the pod's service account bound to the pod.
func (a *ProbeAgents) kubeconfig(ctx context.Context, pod *corev1.Pod) (string, error) {
	ttl := int64(24 * time.Hour / time.Second)
	tr, err := a.Clientset.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &ttl,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for agent pod %s: %w", pod.Name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: a.Server, CertificateAuthorityData: a.CA}
	cfg.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "agent"}
	cfg.CurrentContext = "local"
	path := filepath.Join(a.Dir, "probe-"+string(pod.UID)+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// Kill kills the agent process on node, as a crashed container; the stand-in restarts it within
// seconds, as the kubelet does. It reports whether there was one.
func (a *ProbeAgents) Kill(node string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.procs {
		if p.node == node && !p.exited() {
			_ = p.cmd.Process.Kill()
			return true
		}
	}
	return false
}

// Hold keeps the agent on node down (held true: killed, not restarted) or lets it run again, as
// a container that keeps crashing and one that recovers; its pod's Ready condition follows the
// readiness probe (probeReadiness), as the kubelet reports a container that is not running.
func (a *ProbeAgents) Hold(ctx context.Context, node string, held bool) error {
	a.mu.Lock()
	a.held[node] = held
	var killed []*agentProc
	for uid, p := range a.procs {
		if held && p.node == node {
			killed = append(killed, p)
			delete(a.procs, uid)
		}
	}
	a.mu.Unlock()
	for _, p := range killed {
		p.kill()
	}
	return ctx.Err()
}

// restart kills p as the kubelet kills a container whose liveness probe failed (SIGTERM, then
// SIGKILL, which also ends a stopped process); Reconcile starts the pod's process again.
func (a *ProbeAgents) restart(p *agentProc, why string) {
	if f, err := os.OpenFile(filepath.Join(a.Dir, "probe-"+p.node+".log"), os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		_, _ = fmt.Fprintf(f, "sim-probe-kubelet: restarting the agent: %s\n", why)
		f.Close()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	a.unhang(p.node)
	a.mu.Lock()
	if a.restarts == nil {
		a.restarts, a.why = map[string]int{}, map[string]string{}
	}
	a.restarts[p.node]++
	a.why[p.node] = why
	a.mu.Unlock()
}

// RestartReason is why the liveness probe last restarted the agent on node ("" before any).
func (a *ProbeAgents) RestartReason(node string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.why[node]
}

// Restarts is how many times the agent on node was restarted by its liveness probe.
func (a *ProbeAgents) Restarts(node string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.restarts[node]
}

func (p *agentProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *agentProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// ctrlRunnable adapts a function to a manager runnable.
type ctrlRunnable func(context.Context) error

func (f ctrlRunnable) Start(ctx context.Context) error { return f(ctx) }

// PIDs are the agent processes running now, by node (the scale bench reads their CPU and memory).
func (a *ProbeAgents) PIDs() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for _, p := range a.procs {
		if !p.exited() && p.cmd.Process != nil {
			out[p.node] = p.cmd.Process.Pid
		}
	}
	return out
}
