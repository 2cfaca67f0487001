package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// VirtAPIServiceHost is the externalName of the virt-api Service: the name kube-apiserver dials
// for virt-api's aggregated API (virt-api listens on this machine's loopback).
const VirtAPIServiceHost = "localhost"

// registerVirtAPIAggregation makes kube-apiserver route virt-api's aggregated API
// (subresources.kubevirt.io, what virtctl's migrate, start, stop, console... call) to the local
// virt-api process, as virt-operator's APIServices and virt-api Service do in a cluster.
//
// In a cluster the Service is a ClusterIP Service (port 443 → virt-api pods' 8443): the aggregator
// dials the cluster IP and kube-proxy on the control-plane node forwards the connection to a
// virt-api pod. No kube-proxy runs here, and aggregator routing straight to an EndpointSlice
// (--enable-aggregator-routing) cannot point at virt-api either: the API server refuses endpoint
// addresses in the loopback range. So the virt-api Service is an ExternalName Service naming this
// machine (VirtAPIServiceHost), which kube-proxy would ignore in a cluster (ExternalName is a
// cluster-DNS CNAME): the aggregator resolves it itself and dials <externalName>:<APIService
// port>, the generator having set that port to virt-api's. TLS is checked as in a cluster: the
// APIServices carry the KubeVirt CA and virt-api's certificate names virt-api.kubevirt.svc; virt-api
// trusts the aggregator's proxy client certificate through the requestheader CA that
// kube-apiserver publishes in kube-system/extension-apiserver-authentication.
func (c *Cluster) registerVirtAPIAggregation(ctx context.Context, apiServices []*unstructured.Unstructured) error {
	names := map[string]bool{}
	for _, a := range apiServices {
		name, _, _ := unstructured.NestedString(a.Object, "spec", "service", "name")
		ns, _, _ := unstructured.NestedString(a.Object, "spec", "service", "namespace")
		if ns != KubeVirtNamespace || name == "" {
			return fmt.Errorf("APIService %s refers to service %s/%s, want one in %s", a.GetName(), ns, name, KubeVirtNamespace)
		}
		names[name] = true
	}
	for name := range names {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: KubeVirtNamespace, Name: name, Labels: map[string]string{"kubevirt.io": name}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: VirtAPIServiceHost},
		}
		if err := c.Client.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Service %s: %w", name, err)
		}
	}
	if err := c.applyKubeVirtObjects(ctx, apiServices); err != nil {
		return err
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, a := range apiServices {
			group, _, _ := unstructured.NestedString(a.Object, "spec", "group")
			version, _, _ := unstructured.NestedString(a.Object, "spec", "version")
			body, err := c.Clientset.Discovery().RESTClient().Get().AbsPath("/apis", group, version).DoRaw(ctx)
			if err != nil {
				last = fmt.Errorf("%s/%s: %v: %s", group, version, err, strings.TrimSpace(string(body)))
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("virt-api's aggregated API not reachable through kube-apiserver: last answer %v", last)
	}
	c.logf("virt-api's aggregated API (%d APIServices) answers through kube-apiserver", len(apiServices))
	return nil
}
