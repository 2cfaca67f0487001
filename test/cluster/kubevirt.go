package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeVirt install facts the local cluster reproduces.
const (
	KubeVirtNamespace = "kubevirt"
	KubeVirtName      = "kubevirt"
	KubeVirtVersion   = "v1.9.0"
)

// BootstrapKubeVirt creates what a KubeVirt install leaves behind before virt-operator's work
// starts: the kubevirt namespace, KubeVirt's service accounts and a KubeVirt CR in phase Deployed. The virt-operator simulator
// (test/sim) then owns the CR's conditions and the virt-handler DaemonSet.
func BootstrapKubeVirt(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KubeVirtNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", KubeVirtNamespace, err)
	}
	for _, sa := range []string{"kubevirt-apiserver", "kubevirt-controller", "kubevirt-handler"} {
		obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: KubeVirtNamespace, Name: sa}}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service account %s: %w", sa, err)
		}
	}
	kv := &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: KubeVirtName, Namespace: KubeVirtNamespace},
		Spec: kubevirtv1.KubeVirtSpec{
			Configuration: kubevirtv1.KubeVirtConfiguration{
				DeveloperConfiguration: &kubevirtv1.DeveloperConfiguration{},
			},
		},
	}
	if err := c.Create(ctx, kv); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create KubeVirt CR: %w", err)
	}
	kv.Status = kubevirtv1.KubeVirtStatus{
		Phase:                   kubevirtv1.KubeVirtPhaseDeployed,
		DefaultArchitecture:     "amd64",
		TargetKubeVirtVersion:   KubeVirtVersion,
		ObservedKubeVirtVersion: KubeVirtVersion,
	}
	return c.Status().Update(ctx, kv)
}
