package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/env"
)

// Framework is a suite's environment.
type Framework struct {
	*env.Env
}

// Start brings up an environment for the suite (call from BeforeSuite) and registers its
// teardown. Logs stay in a temporary folder that is named in the output and kept on failure.
func Start(opts env.Options) *Framework {
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "migranet-suite-")
		Expect(err).NotTo(HaveOccurred())
		opts.Dir = filepath.Join(dir, "cluster")
	}
	opts.Progress = GinkgoWriter
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e, err := env.Start(ctx, opts)
	Expect(err).NotTo(HaveOccurred(), "starting the local environment")
	fmt.Fprintf(GinkgoWriter, "suite environment in %s\n", e.Dir)
	DeferCleanup(func() {
		e.Stop()
		if !CurrentSpecReport().Failed() {
			_ = os.RemoveAll(filepath.Dir(e.Dir))
		}
	})
	return &Framework{Env: e}
}

// Namespace creates a namespace for the current test and deletes it afterwards.
func (f *Framework) Namespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	Expect(f.Client.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// Kubectl runs the real kubectl against the environment, as a user would, and returns its
// stdout and stderr.
func (f *Framework) Kubectl(stdin string, args ...string) (string, string, error) {
	cmd := exec.Command(f.Binaries.Kubectl, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// Timeouts of the wait helpers.
const (
	Short = 10 * time.Second
	Long  = 60 * time.Second
)
