package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Binaries locates the control-plane commands.
type Binaries struct {
	Etcd, APIServer, Scheduler, ControllerManager, Kubectl, Kwok string
	// VirtAPI, VirtController and Virtctl are KubeVirt's (release KubeVirtVersion);
	// KubeVirtGenerate prints KubeVirt's own CRDs, RBAC, webhook configurations and APIServices
	// (test/tools/kubevirt/generate).
	VirtAPI, VirtController, Virtctl, KubeVirtGenerate string
}

// RepoRoot is the migranet checkout this package was compiled from.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BuildBinaries builds whatever is missing from the per-version cache (test/tools/build.sh,
// progress on stderr) and returns where the binaries are.
func BuildBinaries(ctx context.Context) (*Binaries, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(RepoRoot(), "test", "tools", "build.sh"), "all")
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building the control plane (test/tools/build.sh): %w", err)
	}
	dirs := strings.Split(strings.TrimSpace(out.String()), ":")
	if len(dirs) != 3 {
		return nil, fmt.Errorf("test/tools/build.sh printed %q, want <kubernetes dir>:<kwok dir>:<kubevirt dir>", out.String())
	}
	k8s, kwok, kubevirt := dirs[0], dirs[1], dirs[2]
	return &Binaries{
		Etcd:              filepath.Join(k8s, "etcd"),
		APIServer:         filepath.Join(k8s, "kube-apiserver"),
		Scheduler:         filepath.Join(k8s, "kube-scheduler"),
		ControllerManager: filepath.Join(k8s, "kube-controller-manager"),
		Kubectl:           filepath.Join(k8s, "kubectl"),
		Kwok:              filepath.Join(kwok, "kwok"),
		VirtAPI:           filepath.Join(kubevirt, "virt-api"),
		VirtController:    filepath.Join(kubevirt, "virt-controller"),
		Virtctl:           filepath.Join(kubevirt, "virtctl"),
		KubeVirtGenerate:  filepath.Join(kubevirt, "kubevirt-generate"),
	}, nil
}
