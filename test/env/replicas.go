package env

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/migranet/migranet/test/sim"
)

// DefaultReplicas is the Deployment's replica count in manifests/manager/deployment.yaml: the
// environment runs the install as shipped.
const DefaultReplicas = 2

// startManager installs the default overlay and starts the replicas behind the Service simulator,
// authenticated as the overlay's ServiceAccount.
func (e *Env) startManager(ctx context.Context, binary, dir string, replicas int) error {
	svc, err := sim.StartService(time.Second)
	if err != nil {
		return err
	}
	e.Service = svc
	// The webhook configuration starts without a CA bundle: the replicas' built-in issuer creates
	// the Secret, fills it and injects the bundle, as in a real install.
	if err := e.Reinstall(ctx); err != nil {
		return err
	}
	kubeconfig, err := e.serviceAccountKubeconfig(ctx, filepath.Join(dir, "migranet.kubeconfig"))
	if err != nil {
		return err
	}
	for i := range replicas {
		r := e.NewReplica(binary, kubeconfig, fmt.Sprintf("migranet-%d", i))
		if e.Manager == nil {
			e.Manager = r
		}
		e.Replicas = append(e.Replicas, r)
	}
	if err := e.StartReplicas(ctx); err != nil {
		return err
	}
	fmt.Fprintf(e.progress, "env: %d migranet replicas running as %s\n", replicas, ServiceAccountUser)
	return e.Manager.WaitWebhooksRegistered(ctx, e.Client)
}

// Reinstall applies the default overlay again, as an admin's upgrade does (`kubectl apply
// --server-side -k manifests/`, here without the Deployment and with the webhooks pointed at the
// Service simulator); it fails where that command would, on a conflict. flags go to kubectl apply.
func (e *Env) Reinstall(ctx context.Context, flags ...string) error {
	return installForLocalReplicas(ctx, e.Cluster, e.release, "https://"+e.Service.Addr(), nil, flags...)
}

// Upgrade applies another release's manifests, the admin's `kubectl apply --server-side -f
// migranet.yaml`: from then on Reinstall applies those. The running replicas are left alone, as
// a Deployment's pods are until its rollout replaces them (see NewReplica).
func (e *Env) Upgrade(ctx context.Context, to Release, flags ...string) error {
	e.release = to
	return e.Reinstall(ctx, flags...)
}

// StartReplicas starts every replica that is not running, at once, and waits until each is ready
// and routed to.
func (e *Env) StartReplicas(ctx context.Context) error {
	errs := make(chan error, len(e.Replicas))
	for _, r := range e.Replicas {
		go func() {
			if r.PID() != 0 {
				errs <- nil
				return
			}
			errs <- r.Start(ctx)
		}()
	}
	var all []error
	for range e.Replicas {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// StopReplicas stops every replica cleanly: migranet is down.
func (e *Env) StopReplicas() {
	for _, r := range e.Replicas {
		r.Stop()
	}
}

// Leader returns the replica whose controllers run (it logged the lease acquisition in its
// current run), or nil.
func (e *Env) Leader() *Manager {
	for _, r := range e.Replicas {
		if r.PID() != 0 && r.Leads() {
			return r
		}
	}
	return nil
}

// NewReplica returns another manager replica (not started) like the first one: same identity,
// behind the same Service, running binary (the first one's when empty).
func (e *Env) NewReplica(binary, kubeconfig, name string) *Manager {
	if e.Manager != nil {
		kubeconfig = e.Manager.Kubeconfig
		if binary == "" {
			binary = e.Manager.Binary
		}
	}
	return &Manager{Binary: binary, Kubeconfig: kubeconfig, Name: name,
		Dir: filepath.Join(e.Dir, "migranet"), Service: e.Service, ExtraArgs: e.managerArgs}
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

// SetManagerArgs replaces the arguments added to every replica's command line (Options.ManagerArgs)
// for their next start.
func (e *Env) SetManagerArgs(args ...string) {
	e.managerArgs = args
	for _, r := range e.Replicas {
		r.ExtraArgs = args
	}
}
