package kubevirt

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

// statusLine is one line of `migranet status -w -o json`.
type statusLine struct {
	Type      string `json:"type"`
	Migration *struct {
		Name          string `json:"name"`
		Phase         string `json:"phase"`
		Network       string `json:"network"`
		TargetAddress string `json:"targetAddress"`
		State         string `json:"state"`
	} `json:"migration"`
}

var _ = Describe("migranet status with KubeVirt's migration controller", func() {
	BeforeEach(func() { DeferCleanup(resetSettings) })

	It("follows a migration over the migration network through every phase KubeVirt drives, to completed", func(ctx context.Context) {
		f.SetSetting(ctx, v1beta1.MigrationNetwork, net24)
		waitNetworkReady(ctx, netcontroller.ReasonReady)
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "watched", "node-1", nil))

		cmd := exec.Command(f.Manager.Binary, "status", "--kubeconfig", f.Kubeconfig, "-n", ns, "-w", "-o", "json")
		stdout, err := cmd.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		cmd.Stderr = GinkgoWriter
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan statusLine, 200)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var l statusLine
				if json.Unmarshal(sc.Bytes(), &l) == nil {
					lines <- l
				}
			}
		}()

		_, stderr, err := f.Kubectl(vmimYAML(ns, "move", "watched"), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)

		var phases, states []string
		var address, network string
		deadline := time.After(framework.Long)
	follow:
		for {
			select {
			case l, ok := <-lines:
				Expect(ok).To(BeTrue(), "migranet status -w ended early")
				if l.Migration == nil || l.Migration.Name != "move" {
					continue
				}
				if n := len(phases); n == 0 || phases[n-1] != l.Migration.Phase {
					phases = append(phases, l.Migration.Phase)
				}
				states = append(states, l.Migration.State)
				if l.Migration.State == "migrating" { // finished rows no longer claim a network
					address, network = l.Migration.TargetAddress, l.Migration.Network
				}
				if l.Migration.State == "completed" {
					break follow
				}
			case <-deadline:
				Fail("no completed row; phases seen: " + strings.Join(phases, " → "))
			}
		}
		GinkgoWriter.Println("phases:", strings.Join(phases, " → "), "states:", strings.Join(states, " → "))
		// The watch renders the cache after each burst of changes: Pending (the migration as
		// created) and Scheduling (virt-controller's next write, milliseconds later) can fall
		// into one burst on a loaded machine, so Pending need not get a row of its own.
		want := []string{}
		for _, p := range everyPhase[1:] {
			want = append(want, string(p))
		}
		Expect(phases).To(ContainElements(want), "every phase shown: %s", strings.Join(phases, " → "))
		for i := 1; i < len(want); i++ {
			Expect(indexOf(phases, want[i-1])).To(BeNumerically("<", indexOf(phases, want[i])), "in order: %v", phases)
		}
		Expect(states).To(ContainElement("migrating"))
		Expect(network).To(Equal("Migration"), "the target's address %s lies in the migration network", address)
		Expect(address).To(HavePrefix("192.168.100."))

		Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
		Expect(cmd.Wait()).To(Succeed(), "Ctrl-C ends -w with exit 0")
	})
})

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
