package cluster

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// serviceAccountTokenTTL is how long the tokens of KubeVirt's components last: longer than any
// `make dev` session.
const serviceAccountTokenTTL = 30 * 24 * time.Hour

// writeServiceAccountKubeconfig writes a kubeconfig that authenticates as the service account
// namespace/name with a token from the TokenRequest API (what a pod's projected token is), so
// KubeVirt's components run under their own identities and RBAC.
func (c *Cluster) writeServiceAccountKubeconfig(ctx context.Context, path, namespace, name string) error {
	ttl := int64(serviceAccountTokenTTL / time.Second)
	tr, err := c.Clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for service account %s/%s: %w", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.CA.CertPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}
