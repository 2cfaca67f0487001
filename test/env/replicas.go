package env

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/migranet/migranet/test/sim"
)

// startManager installs the default overlay and starts the first manager replica behind the
// Service simulator, authenticated as the overlay's ServiceAccount.
func (e *Env) startManager(ctx context.Context, binary, dir string) error {
	svc, err := sim.StartService(time.Second)
	if err != nil {
		return err
	}
	e.Service = svc
	// The webhook configuration starts without a CA bundle: the replicas' built-in issuer fills
	// the shipped Secret and injects the bundle, as in a real install.
	if err := installForLocalReplicas(ctx, e.Cluster, "https://"+svc.Addr(), nil); err != nil {
		return err
	}
	kubeconfig, err := e.serviceAccountKubeconfig(ctx, filepath.Join(dir, "migranet.kubeconfig"))
	if err != nil {
		return err
	}
	e.Manager = e.NewReplica(binary, kubeconfig, "migranet-0")
	if err := e.Manager.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(e.progress, "env: migranet manager running as %s\n", ServiceAccountUser)
	return e.Manager.WaitWebhooksRegistered(ctx, e.Client)
}

// NewReplica returns another manager replica (not started) like the first one: same binary and
// identity, behind the same Service.
func (e *Env) NewReplica(binary, kubeconfig, name string) *Manager {
	if e.Manager != nil {
		binary, kubeconfig = e.Manager.Binary, e.Manager.Kubeconfig
	}
	return &Manager{Binary: binary, Kubeconfig: kubeconfig, Name: name,
		Dir: filepath.Join(e.Dir, "migranet"), Service: e.Service}
}

// serviceAccountKubeconfig writes a kubeconfig holding a token of the overlay's ServiceAccount,
// issued by the API server's TokenRequest API as the kubelet would for the pod.
func (e *Env) serviceAccountKubeconfig(ctx context.Context, path string) (string, error) {
	expiry := int64((24 * time.Hour).Seconds())
	tr, err := e.Clientset.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, ServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("issuing a token for %s: %w", ServiceAccountUser, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.CA.CertPEM}
	cfg.AuthInfos[ServiceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: ServiceAccount, Namespace: Namespace}
	cfg.CurrentContext = "local"
	return path, clientcmd.WriteToFile(*cfg, path)
}
