package sim

import (
	"os"
	"path/filepath"

	"github.com/migranet/migranet/test/cluster"
)

// The common names of virt-handler's certificates, which its migration mTLS checks (KubeVirt's
// pkg/util/tls: kubevirt.io:system:<kind>:<component>).
const (
	HandlerServerCN = "kubevirt.io:system:node:virt-handler"
	HandlerClientCN = "kubevirt.io:system:client:virt-handler"
)

// WriteHandlerCerts issues virt-handler's server and client certificates from ca, as virt-operator
// issues them from the KubeVirt CA for every virt-handler alike, and writes them with the CA into
// dir.
func WriteHandlerCerts(ca *cluster.CA, dir string) (HandlerCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return HandlerCerts{}, err
	}
	server, err := ca.Issue(HandlerServerCN, nil, "virt-handler")
	if err != nil {
		return HandlerCerts{}, err
	}
	client, err := ca.Issue(HandlerClientCN, nil)
	if err != nil {
		return HandlerCerts{}, err
	}
	c := HandlerCerts{CA: filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key")}
	for path, b := range map[string][]byte{c.CA: ca.CertPEM, c.ServerCert: server.CertPEM, c.ServerKey: server.KeyPEM,
		c.ClientCert: client.CertPEM, c.ClientKey: client.KeyPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return HandlerCerts{}, err
		}
	}
	return c, nil
}
