package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// kubeVirtObjects is the generator's output, split by when it is installed.
type kubeVirtObjects struct {
	// crdsAndRBAC go in before virt-api starts; webhooks and apiServices (virt-api's aggregated
	// API, subresources.kubevirt.io) once it serves.
	crdsAndRBAC, webhooks, apiServices []*unstructured.Unstructured
}

// generateKubeVirt runs kubevirt-generate for this cluster's virt-api URL and KubeVirt CA.
func (c *Cluster) generateKubeVirt(ctx context.Context) (*kubeVirtObjects, error) {
	caFile := filepath.Join(c.Dir, "pki", "kubevirt-ca.crt")
	if err := os.WriteFile(caFile, c.kubeVirtCA.CertPEM, 0o600); err != nil {
		return nil, err
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Binaries.KubeVirtGenerate, "--namespace", KubeVirtNamespace,
		"--virt-api-url", c.VirtAPIURL(), "--ca-bundle", caFile)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubevirt-generate: %w: %s", err, stderr.String())
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "kubevirt-generated.yaml"), out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	objs := &kubeVirtObjects{}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding kubevirt-generate output: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		switch u.GetKind() {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			objs.webhooks = append(objs.webhooks, u)
		case "APIService":
			objs.apiServices = append(objs.apiServices, u)
		default:
			objs.crdsAndRBAC = append(objs.crdsAndRBAC, u)
		}
	}
	if len(objs.webhooks) != 2 {
		return nil, fmt.Errorf("kubevirt-generate printed %d webhook configurations, want 2", len(objs.webhooks))
	}
	if len(objs.apiServices) == 0 {
		return nil, fmt.Errorf("kubevirt-generate printed no APIService")
	}
	return objs, nil
}

// applyKubeVirtObjects creates the objects (keeping existing ones) and waits for every CRD among
// them to be established.
func (c *Cluster) applyKubeVirtObjects(ctx context.Context, objs []*unstructured.Unstructured) error {
	var crds []string
	for _, o := range objs {
		if err := c.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	for _, name := range crds {
		if err := waitEstablished(ctx, c.Client, name); err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	c.logf("%d KubeVirt objects installed (%d CRDs)", len(objs), len(crds))
	return nil
}

// VirtAPIURL is where virt-api serves (empty unless StartKubeVirt ran).
func (c *Cluster) VirtAPIURL() string {
	if c.virtAPIPort == 0 {
		return ""
	}
	return "https://127.0.0.1:" + strconv.Itoa(c.virtAPIPort)
}
