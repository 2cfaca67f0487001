package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// LauncherImage is the virt-launcher image virt-controller puts in its pods; kwok never pulls it.
const LauncherImage = "kubevirt/virt-launcher:" + KubeVirtVersion

// startVirtController runs virt-controller as the kubevirt-controller service account and waits
// until it has taken the leader lease and started its controllers.
func (c *Cluster) startVirtController(ctx context.Context) error {
	dir := filepath.Join(c.Dir, "virt-controller")
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return err
	}
	prom, err := c.kubeVirtCA.Issue("virt-controller", nil, "127.0.0.1", "virt-controller."+KubeVirtNamespace+".svc")
	if err != nil {
		return err
	}
	crt, key, err := writePair(dir, "tls", prom)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := c.writeServiceAccountKubeconfig(ctx, kubeconfig, KubeVirtNamespace, ControllerServiceAccount); err != nil {
		return err
	}
	port := FreePort()
	p, err := startProcessWithEnv(c.Dir, "virt-controller", c.Binaries.VirtController, []string{"TMPDIR=" + filepath.Join(dir, "tmp")},
		"--kubeconfig", kubeconfig,
		"--listen", "127.0.0.1", "--port", strconv.Itoa(port),
		"--prom-cert-file", crt, "--prom-key-file", key,
		"--launcher-image", LauncherImage)
	if err != nil {
		return err
	}
	p.grace = 2 * time.Second
	c.procs = append(c.procs, p)
	httpc := c.kubeVirtHTTPClient()
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/leader"
	err = p.waitFor(ctx, 3*time.Minute, func() error {
		resp, err := httpc.Get(url)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		var body struct {
			APIServer struct {
				Leader string `json:"leader"`
			} `json:"apiserver"`
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/leader: %s", resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return err
		}
		if body.APIServer.Leader != "true" {
			return fmt.Errorf("/leader: not leading yet")
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.logf("virt-controller %s leading", KubeVirtVersion)
	return nil
}
