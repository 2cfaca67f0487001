package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeVirtMigrationAdmitter is the name of virt-api's validating webhook for migration creates.
const KubeVirtMigrationAdmitter = "migration-create-validator.kubevirt.io"

// startVirtAPI runs virt-api as the kubevirt-apiserver service account, serving on 127.0.0.1
// with a certificate of the KubeVirt CA, and waits until its /healthz answers.
func (c *Cluster) startVirtAPI(ctx context.Context) error {
	dir := filepath.Join(c.Dir, "virt-api")
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return err
	}
	serving, err := c.kubeVirtCA.Issue("virt-api", nil, "127.0.0.1", "virt-api."+KubeVirtNamespace+".svc")
	if err != nil {
		return err
	}
	crt, key, err := writePair(dir, "tls", serving)
	if err != nil {
		return err
	}
	handlerClient, err := c.kubeVirtCA.Issue("kubevirt.io:system:client:virt-api", nil)
	if err != nil {
		return err
	}
	handlerCrt, handlerKey, err := writePair(dir, "handler-client", handlerClient)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := c.writeServiceAccountKubeconfig(ctx, kubeconfig, KubeVirtNamespace, APIServerServiceAccount); err != nil {
		return err
	}
	p, err := startProcessWithEnv(c.Dir, "virt-api", c.Binaries.VirtAPI, []string{"TMPDIR=" + filepath.Join(dir, "tmp")},
		"--kubeconfig", kubeconfig,
		"--listen", "127.0.0.1", "--port", strconv.Itoa(c.virtAPIPort),
		"--tls-cert-file", crt, "--tls-key-file", key,
		"--handler-cert-file", handlerCrt, "--handler-key-file", handlerKey,
		"--ca-configmap-name", KubeVirtCAConfigMap)
	if err != nil {
		return err
	}
	p.grace = 2 * time.Second // virt-api waits 5 s for a load balancer before it stops serving
	c.procs = append(c.procs, p)
	httpc := c.kubeVirtHTTPClient()
	err = p.waitFor(ctx, 2*time.Minute, func() error {
		resp, err := httpc.Get(c.VirtAPIURL() + "/healthz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.logf("virt-api %s serving at %s", KubeVirtVersion, c.VirtAPIURL())
	return nil
}

// kubeVirtHTTPClient trusts only the KubeVirt CA.
func (c *Cluster) kubeVirtHTTPClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(c.kubeVirtCA.Cert)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

// waitKubeVirtAdmission waits until the API server calls virt-api's webhooks: a dry-run migration
// of a VMI that does not exist is refused by KubeVirt's own migration admitter.
func (c *Cluster) waitKubeVirtAdmission(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &kubevirtv1.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Namespace: KubeVirtNamespace, Name: "admission-probe"},
			Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "no-such-vmi"},
		}
		last = c.Client.Create(ctx, probe, client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), KubeVirtMigrationAdmitter), nil
	})
	if err != nil {
		return fmt.Errorf("virt-api's admission not in the API server's chain: last answer %v", last)
	}
	c.logf("virt-api's webhooks answer the API server")
	return nil
}
