package chart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Render runs kubectl kustomize for the three renderings the chart is generated from, on the
// manifests/ directory of the tree at root.
func Render(ctx context.Context, kubectl, root string) (Renders, error) {
	manifests := filepath.Join(root, "manifests")
	var r Renders
	var err error
	if r.Builtin, err = Kustomize(ctx, kubectl, manifests); err != nil {
		return r, err
	}
	if r.CertManager, err = Kustomize(ctx, kubectl, filepath.Join(manifests, "overlays", "cert-manager")); err != nil {
		return r, err
	}
	r.Monitoring, err = KustomizeWith(ctx, kubectl, []string{manifests}, []string{filepath.Join(manifests, "monitoring")})
	return r, err
}

// Kustomize is `kubectl kustomize dir`.
func Kustomize(ctx context.Context, kubectl, dir string) ([]byte, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
	}
	return out.Bytes(), nil
}

// KustomizeWith renders a kustomization of its own, in a temporary directory, holding resources
// and components (directories, named by path).
func KustomizeWith(ctx context.Context, kubectl string, resources, components []string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "migranet-chart-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	for _, list := range []struct {
		name  string
		paths []string
	}{{"resources", resources}, {"components", components}} {
		if len(list.paths) == 0 {
			continue
		}
		kust += list.name + ":\n"
		for _, p := range list.paths {
			rel, err := relative(dir, p) // kustomize refuses absolute roots
			if err != nil {
				return nil, err
			}
			kust += "- " + rel + "\n"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		return nil, err
	}
	return Kustomize(ctx, kubectl, dir)
}

// relative is path p as seen from dir.
func relative(dir, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.Rel(dir, abs)
}
