package kubevirt

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// exampleCommand is one command of examples/README.md and the exit status it must end with.
type exampleCommand struct {
	line string
	exit int
}

var exitComment = regexp.MustCompile(`#\s*exit\s+(\d+)\s*$`)

// exampleCommands reads the commands of every ```sh block of the examples' README, in order: one
// per line (a trailing backslash continues it), the exit status from a trailing "# exit N".
func exampleCommands(path string) []exampleCommand {
	raw, err := os.ReadFile(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []exampleCommand
	inBlock, pending := false, ""
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case !inBlock && strings.TrimSpace(l) == "```sh":
			inBlock = true
			continue
		case inBlock && strings.TrimSpace(l) == "```":
			inBlock = false
			continue
		case !inBlock:
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			pending += cont
			continue
		}
		line := strings.TrimSpace(pending + l)
		pending = ""
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := exampleCommand{line: line}
		if m := exitComment.FindStringSubmatch(line); m != nil {
			c.exit, _ = strconv.Atoi(m[1])
		}
		out = append(out, c)
	}
	return out
}

var _ = Describe("the examples", func() {
	It("run as written in examples/README.md, each command ending with the exit status it says", func(ctx context.Context) {
		root := cluster.RepoRoot()
		cmds := exampleCommands(filepath.Join(root, "examples", "README.md"))
		Expect(len(cmds)).To(BeNumerically(">=", 20), "commands parsed from examples/README.md")

		// The README's world: the repository's root with .dev/kubeconfig, and kubectl and migranet
		// on PATH.
		work := GinkgoT().TempDir()
		Expect(os.Mkdir(filepath.Join(work, ".dev"), 0o755)).To(Succeed())
		Expect(os.Symlink(f.Kubeconfig, filepath.Join(work, ".dev", "kubeconfig"))).To(Succeed())
		Expect(os.Symlink(filepath.Join(root, "examples"), filepath.Join(work, "examples"))).To(Succeed())
		bin := filepath.Join(work, "bin")
		Expect(os.Mkdir(bin, 0o755)).To(Succeed())
		Expect(os.Symlink(f.Manager.Binary, filepath.Join(bin, "migranet"))).To(Succeed())
		Expect(os.Symlink(f.Binaries.Kubectl, filepath.Join(bin, "kubectl"))).To(Succeed())
		env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + work}

		DeferCleanup(cleanUpExamples)
		for i, c := range cmds {
			if kv, ok := strings.CutPrefix(c.line, "export "); ok {
				env = append(env, kv)
				continue
			}
			cmd := exec.CommandContext(ctx, "bash", "-c", c.line)
			cmd.Dir, cmd.Env = work, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if exit, ok := err.(*exec.ExitError); ok {
				code = exit.ExitCode()
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
			GinkgoWriter.Printf("$ %s   (exit %d)\n%s", c.line, code, out.String())
			Expect(code).To(Equal(c.exit), "command %d of examples/README.md: %s\n%s", i+1, c.line, out.String())
		}
	})
})

// cleanUpExamples undoes what the examples leave behind, even when they stopped halfway: the
// default policy, and the demo namespace gone (its migrations force-cancelled first).
func cleanUpExamples(ctx context.Context) {
	f.SetSetting(ctx, v1beta1.MigrationPolicy, "")
	vmims := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	Expect(f.Client.List(ctx, vmims, client.InNamespace("demo"))).To(Succeed())
	for i := range vmims.Items {
		m := &vmims.Items[i]
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["migranet.io/force-cancel"] = "true"
		_ = f.Client.Update(ctx, m)
	}
	ns := &corev1.Namespace{}
	ns.Name = "demo"
	Expect(client.IgnoreNotFound(f.Client.Delete(ctx, ns))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(f.Client.Get(ctx, client.ObjectKey{Name: "demo"}, &corev1.Namespace{}))
	}).WithContext(ctx).WithTimeout(framework.Long).Should(BeTrue(), "namespace demo deleted")
}
