package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/manifests"
)

// applyGuard creates migranet's namespace when missing (the guard's parameter lives there) and
// the embedded guard policies (manifests/guard) when missing, their parameter in that namespace,
// as the kustomize base does for an install.
func applyGuard(ctx context.Context, c client.Client, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	data, err := fs.ReadFile(manifests.FS, "guard/policy.yaml")
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("guard/policy.yaml: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "ValidatingAdmissionPolicyBinding" {
			if err := unstructured.SetNestedField(u.Object, namespace, "spec", "paramRef", "namespace"); err != nil {
				return err
			}
		}
		// Created when missing, never changed: on a cluster where the manifests installed them,
		// they belong to that install (and its next kubectl apply).
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}
