package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CRDDirs are the folders whose CRDs every local cluster installs: KubeVirt's, the
// NetworkAttachmentDefinition's, whereabouts' own (IPPool, OverlappingRangeIPReservation and
// NodeSlicePool, from the module the proving ground builds the plugin from, as its install
// applies them) and migranet's own.
func CRDDirs() ([]string, error) {
	root := RepoRoot()
	wb, err := WhereaboutsCRDDir()
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(root, "test", "crds"), wb, filepath.Join(root, "manifests", "crd")}, nil
}

// WhereaboutsCRDDir is doc/crds of the whereabouts module test/tools/cni pins, downloaded from the
// module proxy when the module cache lacks it.
func WhereaboutsCRDDir() (string, error) {
	dir := filepath.Join(RepoRoot(), "test", "tools", "cni")
	const mod = "github.com/k8snetworkplumbingwg/whereabouts"
	out, err := exec.Command("go", "-C", dir, "mod", "download", "-json", mod).Output()
	if err != nil {
		return "", fmt.Errorf("whereabouts CRDs: go mod download %s in %s: %w", mod, dir, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("whereabouts CRDs: no module directory in %q", out)
	}
	return filepath.Join(m.Dir, "doc", "crds"), nil
}

// InstallCRDs creates every CRD found in CRDDirs and waits until all are established. When the
// cluster runs KubeVirt, the kubevirt.io CRDs are left to StartKubeVirt, which installs KubeVirt's
// own.
func (c *Cluster) InstallCRDs(ctx context.Context) error {
	var crds []*apiextensionsv1.CustomResourceDefinition
	dirs, err := CRDDirs()
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		found, err := ReadCRDs(dir)
		if err != nil {
			return err
		}
		for _, crd := range found {
			if c.kubeVirt && crd.Spec.Group == kubevirtv1.SchemeGroupVersion.Group {
				continue
			}
			crds = append(crds, crd)
		}
	}
	return c.createCRDs(ctx, crds)
}

// InstallCRDDir creates every CRD found in the YAML files below dir (a fixture that not every
// cluster installs, such as Harvester's in test/harvester/crds) and waits until all are
// established. A folder that holds no CRD is an error: a fixture emptied by mistake must not pass.
func (c *Cluster) InstallCRDDir(ctx context.Context, dir string) error {
	crds, err := ReadCRDs(dir)
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		return fmt.Errorf("no CRD in %s", dir)
	}
	return c.createCRDs(ctx, crds)
}

func (c *Cluster) createCRDs(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		if err := c.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c.Client, crd.Name); err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	c.logf("%d CRDs established", len(crds))
	return nil
}

// ReadCRDs decodes every CustomResourceDefinition in the YAML files below dir.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := dec.Decode(crd); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if crd.Kind == "CustomResourceDefinition" {
				out = append(out, crd)
			}
		}
	})
	return out, err
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// DeleteCRDsOfGroup deletes every CRD of group and waits until each is gone: a cluster that
// another release of migranet is to be installed on starts without the current tree's CRDs, which
// InstallCRDs created (their fields would be another manager's, and that release's apply would
// conflict on them).
func (c *Cluster) DeleteCRDsOfGroup(ctx context.Context, group string) error {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.Client.List(ctx, crds); err != nil {
		return err
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if crd.Spec.Group != group {
			continue
		}
		if err := c.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete CRD %s: %w", crd.Name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := c.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not gone: %w", crd.Name, err)
		}
	}
	return nil
}
