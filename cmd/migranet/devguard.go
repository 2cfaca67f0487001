package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/manifests"
)

// applyGuard creates migranet's namespace when missing (the guard's parameter lives there) and
// the embedded guard policies (manifests/guard) when missing, as the kustomize base does for an
// install: the migration networks' parameter in namespace, the policy on the NAD in force scoped to
// kubevirtNamespace with the KubeVirt CR there as its parameter.
func applyGuard(ctx context.Context, c client.Client, namespace, kubevirtNamespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	for _, file := range []string{"guard/policy.yaml", "guard/inforce.yaml"} {
		data, err := fs.ReadFile(manifests.FS, file)
		if err != nil {
			return err
		}
		if err := createGuardObjects(ctx, c, file, data, namespace, kubevirtNamespace); err != nil {
			return err
		}
	}
	return nil
}

// createGuardObjects creates the policies and bindings of one guard file when missing.
func createGuardObjects(ctx context.Context, c client.Client, file string, data []byte, namespace, kubevirtNamespace string) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := placeGuardObject(u, namespace, kubevirtNamespace); err != nil {
			return err
		}
		// Created when missing, never changed: on a cluster where the manifests installed them,
		// they belong to that install (and its next kubectl apply).
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}

// placeGuardObject puts a guard object's namespaces where this install has them: a binding's
// parameter in migranet's namespace, or for the policy on the NAD in force, in KubeVirt's, and
// that policy's scope.
func placeGuardObject(u *unstructured.Unstructured, namespace, kubevirtNamespace string) error {
	inForce := strings.HasSuffix(u.GetName(), "-in-force")
	switch {
	case u.GetKind() == "ValidatingAdmissionPolicyBinding" && inForce:
		return unstructured.SetNestedField(u.Object, kubevirtNamespace, "spec", "paramRef", "namespace")
	case u.GetKind() == "ValidatingAdmissionPolicyBinding":
		return unstructured.SetNestedField(u.Object, namespace, "spec", "paramRef", "namespace")
	case u.GetKind() == "ValidatingAdmissionPolicy" && inForce:
		return unstructured.SetNestedStringMap(u.Object, map[string]string{"kubernetes.io/metadata.name": kubevirtNamespace},
			"spec", "matchConstraints", "namespaceSelector", "matchLabels")
	}
	return nil
}
