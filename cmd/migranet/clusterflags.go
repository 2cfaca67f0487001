package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migranet/migranet/settings"
)

// clusterFlags say which cluster a client command (status, preflight) reads, as whom and in which
// namespace, with kubectl's names, defaults and kubeconfig loading: --kubeconfig, --context,
// -n/--namespace, --request-timeout and --kubevirt-namespace, plus -A/--all-namespaces for the
// commands that register it.
type clusterFlags struct {
	kubeconfig, context string
	namespace           string // -n, when namespaceSet
	namespaceSet        bool
	allNamespaces       bool   // -A
	kubevirtNamespace   string // --kubevirt-namespace
	timeout             string // --request-timeout as typed; check parses it into requestTimeout
	requestTimeout      time.Duration
}

// The "Flags:" lines of the cluster flags, written once for every command that has them.
var (
	docKubeconfig     = flagDoc{"--kubeconfig FILE", "kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config)"}
	docContext        = flagDoc{"--context NAME", "kubeconfig context to use (default: its current context)"}
	docAllNamespaces  = flagDoc{"-A, --all-namespaces", "list every namespace (adds a NAMESPACE column)"}
	docKubeVirtNS     = flagDoc{"--kubevirt-namespace NS", "namespace of the KubeVirt CR (default " + settings.DefaultKubeVirtNamespace + ")"}
	docRequestTimeout = flagDoc{"--request-timeout TIME", "limit for each request to the API server, e.g. 30s, 1m, or\nseconds as a number; 0 waits forever (default 0)"}
)

// docNamespace documents -n/--namespace; what names the namespace's role in the command.
func docNamespace(what string) flagDoc {
	return flagDoc{"-n, --namespace NAMESPACE", what + " (default: the context's namespace, else default)"}
}

// register registers --kubeconfig, --context, -n/--namespace, --request-timeout and
// --kubevirt-namespace on fs.
func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&c.context, "context", "", "")
	for _, n := range []string{"n", "namespace"} {
		fs.Func(n, "", func(v string) error {
			if v == "" {
				return errors.New("needs a namespace name")
			}
			c.namespace, c.namespaceSet = v, true
			return nil
		})
	}
	fs.StringVar(&c.timeout, "request-timeout", "0", "")
	registerKubeVirtNamespace(fs, &c.kubevirtNamespace, "")
}

// registerAllNamespaces registers -A/--all-namespaces on fs; it wins over -n.
func (c *clusterFlags) registerAllNamespaces(fs *flag.FlagSet) {
	for _, n := range []string{"A", "all-namespaces"} {
		fs.BoolVar(&c.allNamespaces, n, false, "")
	}
}

// kubevirtNamespaceFlag names the flag every subcommand that reads the cluster takes: the namespace
// of the KubeVirt CR, of virt-handler and of the migration network's NAD. Without it a command
// reads a network reference without its namespace ("/vm-migration-network-...") that matches no
// probe report: TestEveryClusterCommandTakesKubeVirtNamespace keeps every such command honest.
const kubevirtNamespaceFlag = "kubevirt-namespace"

// registerKubeVirtNamespace registers --kubevirt-namespace on fs into p, default
// settings.DefaultKubeVirtNamespace; usage is the flag package's text ("" where the command writes
// its own "Flags:" lines, docKubeVirtNS).
func registerKubeVirtNamespace(fs *flag.FlagSet, p *string, usage string) {
	fs.StringVar(p, kubevirtNamespaceFlag, settings.DefaultKubeVirtNamespace, usage)
}

// check validates the flags once parsed: it reads --request-timeout.
func (c *clusterFlags) check() error {
	d, err := parseRequestTimeout(c.timeout)
	if err != nil {
		return err
	}
	c.requestTimeout = d
	return nil
}

// parseRequestTimeout reads kubectl's --request-timeout: a duration ("30s", "1m") or a whole
// number of seconds; 0 means no limit.
func parseRequestTimeout(v string) (time.Duration, error) {
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--request-timeout %q: want a duration such as 30s or 1m, or a number of seconds (0: no limit)", v)
	}
	return d, nil
}

// load loads the kubeconfig as kubectl does and returns the REST configuration of userAgent,
// limited by --request-timeout, and the namespace to work in: -A gives "" (all), then -n, then
// the context's namespace, else default.
func (c *clusterFlags) load(userAgent string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.kubeconfig != "" {
		if _, err := os.Stat(c.kubeconfig); err != nil {
			return nil, "", fmt.Errorf("--kubeconfig %s: %w", c.kubeconfig, errors.Unwrap(err))
		}
		rules.ExplicitPath = c.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context})
	cfg, err := cc.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, "", errors.New("no cluster configured: pass --kubeconfig FILE, set $KUBECONFIG, or create ~/.kube/config")
	case err != nil && c.context != "" && (strings.Contains(err.Error(), "context was not found") || strings.Contains(err.Error(), "does not exist")):
		return nil, "", fmt.Errorf("--context %s: no such context in the kubeconfig (kubectl config get-contexts lists them)", c.context)
	case err != nil:
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Timeout = c.requestTimeout
	switch {
	case c.allNamespaces:
		return cfg, metav1.NamespaceAll, nil
	case c.namespaceSet:
		return cfg, c.namespace, nil
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = metav1.NamespaceDefault
	}
	return cfg, ns, nil
}
