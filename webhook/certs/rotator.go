package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// maxRecheck bounds how long the Rotator sleeps between looks, whatever the certificates say.
const maxRecheck = 10 * time.Minute

// Rotator serves the webhook certificate from the Secret and, as the built-in issuer, keeps the
// Secret and the webhook configurations' CA bundles current. It is a manager.Runnable that runs
// on every replica.
type Rotator struct {
	opts    Options
	client  kubernetes.Interface
	serving atomic.Pointer[tls.Certificate]
	queue   workqueue.TypedRateLimitingInterface[string]

	secrets corelisters.SecretLister
	configs []webhookConfig

	mu sync.Mutex
	// problem says why the Rotator is not ready ("" when it is).
	problem string
	// published is the CA bundle every webhook configuration carried when last looked at, and
	// since when.
	published      []byte
	publishedSince time.Time
}

// New returns a Rotator for the cluster at cfg; it talks to the API server only once started.
func New(cfg *rest.Config, opts Options) (*Rotator, error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	r := &Rotator{opts: opts, client: cs, problem: "the certificate watch has not started"}
	r.queue = workqueue.NewTypedRateLimitingQueue[string](
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second))
	return r, nil
}

// NeedLeaderElection is false: every replica serves webhooks and so needs the certificate.
func (r *Rotator) NeedLeaderElection() bool { return false }

// ConfigureTLS makes a TLS configuration serve the Rotator's certificate (for the webhook
// server's TLSOpts).
func (r *Rotator) ConfigureTLS(c *tls.Config) { c.GetCertificate = r.GetCertificate }

// GetCertificate returns the serving certificate last loaded from the Secret.
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := r.serving.Load(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no serving certificate loaded from Secret %s/%s yet", r.opts.Namespace, r.opts.SecretName)
}

// Start watches the Secret (and, as the issuer, the webhook configurations) and keeps them
// current until ctx ends.
func (r *Rotator) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("certs").WithValues("secret", klog.KRef(r.opts.Namespace, r.opts.SecretName))
	ctx = ctrl.LoggerInto(ctx, log)
	r.setProblem(ctx, fmt.Sprintf("waiting for the first list of Secret %s/%s (migranet needs get, list and watch on it)", r.opts.Namespace, r.opts.SecretName))
	synced, err := r.startInformers(ctx)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); r.queue.ShutDown() }()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	log.Info("watching the webhook certificate", "issuer", map[bool]string{true: "built-in", false: "external"}[r.opts.Rotate],
		"webhookConfigurations", r.opts.WebhookConfigurations, "mutatingWebhookConfigurations", r.opts.MutatingWebhookConfigurations)
	r.queue.Add("sync")
	for r.processNext(ctx) {
	}
	return nil
}

func (r *Rotator) processNext(ctx context.Context) bool {
	key, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(key)
	after, err := r.sync(ctx)
	switch {
	case errors.Is(err, errRetry):
		ctrl.LoggerFrom(ctx).V(1).Info("retrying", "reason", err)
		r.queue.AddRateLimited(key)
		return true
	case err != nil:
		ctrl.LoggerFrom(ctx).Error(err, "keeping the webhook certificate current")
		if r.serving.Load() == nil {
			// Nothing to serve yet: readiness says why rather than an earlier, stale reason.
			r.setProblem(ctx, "no serving certificate: "+err.Error())
		}
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	after = min(max(after, 10*time.Millisecond), maxRecheck)
	r.queue.AddAfter(key, after)
	return true
}

// errRetry marks an expected race (another replica wrote first, a cache lags): try again soon.
var errRetry = errors.New("retry")

// startInformers starts one narrow informer for the Secret and one per webhook configuration,
// each listing and watching a single object by name so that RBAC resourceNames authorise it.
func (r *Rotator) startInformers(ctx context.Context) ([]cache.InformerSynced, error) {
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.queue.Add("sync") },
		UpdateFunc: func(any, any) { r.queue.Add("sync") },
		DeleteFunc: func(any) { r.queue.Add("sync") },
	}
	onWatchError := func(what string) cache.WatchErrorHandler {
		return func(_ *cache.Reflector, err error) {
			msg := fmt.Sprintf("watching %s: %v", what, err)
			if apierrors.IsForbidden(err) {
				r.setProblem(ctx, msg)
			}
			ctrl.LoggerFrom(ctx).Info("watch failed", "object", what, "error", err.Error())
		}
	}
	secretFactory := informers.NewSharedInformerFactoryWithOptions(r.client, 0,
		informers.WithNamespace(r.opts.Namespace), informers.WithTweakListOptions(byName(r.opts.SecretName)))
	secrets := secretFactory.Core().V1().Secrets()
	inf := secrets.Informer()
	if err := inf.SetWatchErrorHandler(onWatchError("Secret " + r.opts.Namespace + "/" + r.opts.SecretName)); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(handler); err != nil {
		return nil, err
	}
	r.secrets = secrets.Lister()
	synced := []cache.InformerSynced{inf.HasSynced}
	factories := []informers.SharedInformerFactory{secretFactory}
	r.configs = nil
	if r.opts.Rotate {
		type watched struct {
			name     string
			config   func(informers.SharedInformerFactory, string) (webhookConfig, cache.SharedIndexInformer)
			optional bool
		}
		var all []watched
		for _, name := range r.opts.WebhookConfigurations {
			all = append(all, watched{name, r.validatingConfig, false})
		}
		for _, name := range r.opts.MutatingWebhookConfigurations {
			all = append(all, watched{name, r.mutatingConfig, r.opts.MutatingOptional})
		}
		for _, w := range all {
			f := informers.NewSharedInformerFactoryWithOptions(r.client, 0, informers.WithTweakListOptions(byName(w.name)))
			c, inf := w.config(f, w.name)
			c.optional = w.optional
			if err := inf.SetWatchErrorHandler(onWatchError(c.kind + " " + w.name)); err != nil {
				return nil, err
			}
			if _, err := inf.AddEventHandler(handler); err != nil {
				return nil, err
			}
			r.configs = append(r.configs, c)
			synced = append(synced, inf.HasSynced)
			factories = append(factories, f)
		}
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	go func() {
		<-ctx.Done()
		for _, f := range factories {
			f.Shutdown()
		}
	}()
	return synced, nil
}

func byName(name string) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
}

// setProblem records why the Rotator is not ready ("" when it is) and logs every change.
func (r *Rotator) setProblem(ctx context.Context, problem string) {
	r.mu.Lock()
	changed := r.problem != problem
	r.problem = problem
	r.mu.Unlock()
	if !changed {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	if problem == "" {
		log.Info("webhook certificate ready")
		return
	}
	log.Info("webhook certificate not ready", "problem", problem)
}
