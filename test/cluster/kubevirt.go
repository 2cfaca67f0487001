package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeVirt install facts the local cluster reproduces. KubeVirtVersion is the release whose
// virt-api and virt-controller run (test/tools/build.sh kubevirt).
const (
	KubeVirtNamespace = "kubevirt"
	KubeVirtName      = "kubevirt"
	KubeVirtVersion   = "v1.8.4"
)

// KubeVirt's service accounts (its components' identities) and the ConfigMap holding its CA.
const (
	APIServerServiceAccount  = "kubevirt-apiserver"
	ControllerServiceAccount = "kubevirt-controller"
	HandlerServiceAccount    = "kubevirt-handler"
	KubeVirtCAConfigMap      = "kubevirt-ca"
	// NodeRestrictionGate is the KubeVirt feature gate the bootstrapped CR enables.
	NodeRestrictionGate = "NodeRestriction"
)

// BootstrapKubeVirt creates what a KubeVirt install leaves behind before virt-operator's work
// starts: the kubevirt namespace, KubeVirt's service accounts and a KubeVirt CR in phase Deployed
// with its default architecture and the NodeRestriction feature gate. The virt-operator simulator (test/sim) then owns the CR's
// conditions and the virt-handler DaemonSet. Existing objects are kept.
func BootstrapKubeVirt(ctx context.Context, c client.Client) error {
	return BootstrapKubeVirtAs(ctx, c, KubeVirtName, nil)
}

// BootstrapKubeVirtAs is BootstrapKubeVirt with the KubeVirt CR called name and, when owner is
// set, controlled by it (HCO creates its KubeVirt CR kubevirt-kubevirt-hyperconverged owned by the
// HyperConverged CR).
func BootstrapKubeVirtAs(ctx context.Context, c client.Client, name string, owner *metav1.OwnerReference) error {
	if err := ensureNamespace(ctx, c, KubeVirtNamespace); err != nil {
		return err
	}
	for _, sa := range []string{APIServerServiceAccount, ControllerServiceAccount, HandlerServiceAccount} {
		obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: KubeVirtNamespace, Name: sa}}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service account %s: %w", sa, err)
		}
	}
	kv := &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: KubeVirtNamespace},
		Spec: kubevirtv1.KubeVirtSpec{
			Configuration: kubevirtv1.KubeVirtConfiguration{
				// NodeRestriction (beta in v1.8, off unless listed) makes virt-api refuse a
				// virt-handler's write to a VMI that is not on its node.
				DeveloperConfiguration: &kubevirtv1.DeveloperConfiguration{FeatureGates: []string{NodeRestrictionGate}},
			},
		},
	}
	if owner != nil {
		kv.OwnerReferences = []metav1.OwnerReference{*owner}
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

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// StartKubeVirt does what virt-operator does for virt-api and virt-controller, then runs them:
// KubeVirt's own CRDs and RBAC (from test/tools/kubevirt/generate), the bootstrap of
// BootstrapKubeVirt, a KubeVirt CA in the kubevirt-ca ConfigMap, certificates and
// service-account tokens for both components, virt-api and its webhook configurations (called at
// virt-api's local URL), virt-api's aggregated API (registerVirtAPIAggregation), and
// virt-controller. It returns once virt-api's admission and aggregated API answer and
// virt-controller leads.
func (c *Cluster) StartKubeVirt(ctx context.Context) error {
	began := time.Now()
	if err := ensureNamespace(ctx, c.Client, KubeVirtNamespace); err != nil {
		return err
	}
	ca, err := NewCA("kubevirt.io")
	if err != nil {
		return err
	}
	c.kubeVirtCA = ca
	c.virtAPIPort = FreePort()
	objs, err := c.generateKubeVirt(ctx)
	if err != nil {
		return err
	}
	if err := c.applyKubeVirtObjects(ctx, objs.crdsAndRBAC); err != nil {
		return err
	}
	if err := c.bootstrap(ctx, c); err != nil {
		return err
	}
	caMap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: KubeVirtNamespace, Name: KubeVirtCAConfigMap},
		Data:       map[string]string{"ca-bundle": string(ca.CertPEM)},
	}
	if err := c.Client.Create(ctx, caMap); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ConfigMap %s: %w", KubeVirtCAConfigMap, err)
	}
	if err := c.startVirtAPI(ctx); err != nil {
		return err
	}
	if err := c.applyKubeVirtObjects(ctx, objs.webhooks); err != nil {
		return err
	}
	if err := c.waitKubeVirtAdmission(ctx); err != nil {
		return err
	}
	if err := c.registerVirtAPIAggregation(ctx, objs.apiServices); err != nil {
		return err
	}
	if err := c.startVirtController(ctx); err != nil {
		return err
	}
	c.logf("KubeVirt %s virt-api and virt-controller ready in %s", KubeVirtVersion, time.Since(began).Round(time.Millisecond))
	return nil
}

// KubeVirtCA is the CA of the KubeVirt CR's components (the kubevirt-ca ConfigMap), nil until
// StartKubeVirt ran: virt-operator issues virt-handler's certificates from it.
func (c *Cluster) KubeVirtCA() *CA { return c.kubeVirtCA }
