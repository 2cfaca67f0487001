package env

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/migranet/migranet/test/cluster"
)

// What the default overlay (manifests/kustomization.yaml) installs; the environment runs the
// manager as the same ServiceAccount, bound to the same generated roles.
const (
	Namespace          = "migranet-system"
	ServiceAccount     = "migranet"
	CertSecret         = "migranet-webhook-server-cert"
	WebhookConfig      = "migranet"
	ServiceAccountUser = "system:serviceaccount:" + Namespace + ":" + ServiceAccount
)

// RenderManifests runs the real kubectl's kustomize on dir (relative to the repository root, e.g.
// "manifests" or "manifests/overlays/cert-manager", or an absolute path such as another release's
// manifests) and returns the objects it renders.
func RenderManifests(ctx context.Context, kubectl, dir string) ([]*unstructured.Unstructured, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cluster.RepoRoot(), dir)
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding kubectl kustomize %s: %w", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// applyOrder puts what other objects need first: namespaces and CRDs, then RBAC, then the rest.
var applyOrder = map[string]int{"Namespace": 0, "CustomResourceDefinition": 1, "ServiceAccount": 2,
	"ClusterRole": 3, "Role": 3, "ClusterRoleBinding": 4, "RoleBinding": 4}

// Apply applies objs with the real kubectl's server-side apply, in dependency order, exactly as
// the README's `kubectl apply --server-side` (field manager "kubectl", no --force-conflicts): a
// field migranet took over since the last apply makes it fail, as it would for an admin.
func Apply(ctx context.Context, c *cluster.Cluster, objs []*unstructured.Unstructured, flags ...string) error {
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	rank := func(u *unstructured.Unstructured) int {
		if r, ok := applyOrder[u.GetKind()]; ok {
			return r
		}
		return 5
	}
	sort.SliceStable(sorted, func(i, j int) bool { return rank(sorted[i]) < rank(sorted[j]) })
	var stream bytes.Buffer
	for _, u := range sorted {
		data, err := json.Marshal(u.Object)
		if err != nil {
			return err
		}
		stream.Write(data)
		stream.WriteString("\n")
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Binaries.Kubectl, append([]string{"--kubeconfig", c.Kubeconfig, "apply", "--server-side", "-f", "-"}, flags...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &stream, &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl apply --server-side: %v: %s", err, out.String())
	}
	return nil
}

// DevImage is the image the manifests name until a release pins one.
const DevImage = "migranet:dev"

// Release is what the environment installs: the default overlay of Manifests (a folder kubectl
// kustomize renders, relative to the repository root or absolute; "manifests" when empty), with
// Image in place of DevImage (DevImage when empty), as a release's manifest names its image.
type Release struct{ Manifests, Image string }

func (r Release) render(ctx context.Context, kubectl string) ([]*unstructured.Unstructured, error) {
	dir := r.Manifests
	if dir == "" {
		dir = "manifests"
	}
	objs, err := RenderManifests(ctx, kubectl, dir)
	if err != nil || r.Image == "" {
		return objs, err
	}
	for _, u := range objs {
		if err := setImage(u, r.Image); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// setImage replaces DevImage by image in every container of a workload's pod template.
func setImage(u *unstructured.Unstructured, image string) error {
	containers, found, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if err != nil || !found {
		return err
	}
	for i, c := range containers {
		if m, ok := c.(map[string]any); ok && m["image"] == DevImage {
			m["image"] = image
			containers[i] = m
		}
	}
	return unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
}

// installForLocalReplicas applies release's default overlay the way the environment runs it:
// every object except the Deployment, whose replicas run as processes on this machine (nothing
// runs containers here), and a webhook configuration that reaches them through the Service
// simulator by URL instead of through the Service.
func installForLocalReplicas(ctx context.Context, c *cluster.Cluster, release Release, serviceURL string, caBundle []byte, flags ...string) error {
	objs, err := release.render(ctx, c.Binaries.Kubectl)
	if err != nil {
		return err
	}
	var keep []*unstructured.Unstructured
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment":
			continue
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			if err := pointAtURL(u, serviceURL, caBundle); err != nil {
				return err
			}
		}
		keep = append(keep, u)
	}
	return Apply(ctx, c, keep, flags...)
}

// pointAtURL replaces each webhook's service reference by serviceURL + the service's path, with
// caBundle when not nil (nil leaves the bundle to migranet's certificate rotation).
func pointAtURL(u *unstructured.Unstructured, serviceURL string, caBundle []byte) error {
	hooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
	if err != nil {
		return err
	}
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			return fmt.Errorf("webhook %d of %s is not an object", i, u.GetName())
		}
		path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
		cc := map[string]any{"url": serviceURL + path}
		if caBundle != nil {
			cc["caBundle"] = base64.StdEncoding.EncodeToString(caBundle)
		}
		if err := unstructured.SetNestedField(hook, cc, "clientConfig"); err != nil {
			return err
		}
		hooks[i] = hook
	}
	return unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
}
