package sim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
)

// reportUnmeasured stands in for an agent pod on simulated node networks, where there is no
// migration0 to probe from: it writes the node's PathReport for the network in force with
// problem NotMeasured and the reason the networks are simulated, authenticated with a token bound
// to the pod (the PathReport policy admits only the node's own agent), and marks the pod Ready.
// Called with a.mu held.
func (a *ProbeAgents) reportUnmeasured(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	again := reconcile.Result{RequeueAfter: 2 * time.Second} // the network in force may change
	kv := &kubevirtv1.KubeVirt{}
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: cluster.KubeVirtName}, kv); err != nil {
		return reconcile.Result{}, err
	}
	nad := settings.MigrationNetworkOf(kv)
	if nad == "" {
		return again, nil
	}
	network := cluster.KubeVirtNamespace + "/" + nad
	if a.unmeasured[pod.UID] == network {
		return again, nil
	}
	c, err := a.PodClient(ctx, pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	r := &v1beta1.PathReport{}
	err = c.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, r)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	r.Name = pod.Spec.NodeName
	r.Network, r.Address, r.Port, r.MTU, r.LastRound, r.Failing = network, "", 0, 0, nil, nil
	r.Problem = v1beta1.ProbeNotMeasured
	r.Message = fmt.Sprintf("not measured on simulated networks (%s)", a.Unmeasured)
	r.IntervalSeconds, r.Since = 20, metav1.NowMicro()
	if exists {
		err = c.Update(ctx, r)
	} else {
		err = c.Create(ctx, r)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("PathReport %s as the agent pod %s: %w", r.Name, pod.Name, err)
	}
	a.unmeasured[pod.UID] = network
	if err := a.setReady(ctx, pod, corev1.ConditionTrue); err != nil {
		return reconcile.Result{}, err
	}
	return again, nil
}

// PodClient is a client authenticated as the agent pod (its service account, a token bound to it):
// the one identity the PathReport policy lets write its node's report.
func (a *ProbeAgents) PodClient(ctx context.Context, pod *corev1.Pod) (client.Client, error) {
	path, err := a.kubeconfig(ctx, pod)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: a.Client.Scheme()})
}
