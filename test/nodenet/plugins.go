package nodenet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/migranet/migranet/test/nodenet/delegate"
)

// FlatFileDir is where whereabouts looks for its flat-file configuration on a node (one of the
// paths GetFlatIPAM tries), and so where Plugins mounts its own for the plugin's process.
const FlatFileDir = "/etc/cni/net.d/whereabouts.d"

// Plugins runs the real CNI plugins of one local cluster.
type Plugins struct {
	// BinDir holds the plugin binaries (CNI_PATH): test/tools/build.sh cni.
	BinDir string
	// ConfDir is mounted on FlatFileDir for every plugin run; WriteWhereaboutsConf fills it.
	ConfDir string
	// Timeout bounds each plugin's run (0: PluginTimeout): past it the plugin is killed with the
	// processes it started (its IPAM plugin) and the call fails, as the container runtime's CNI
	// call ends at the kubelet's request deadline (--runtime-request-timeout, 2 m) and the kubelet
	// tries the sandbox again. whereabouts v0.9.2 can wait for ever: its IPManagement returns
	// only once both of its goroutines have, and the one that waits for the lease gives up
	// without telling the other when the lease is lost right after it was won (a select between
	// the two ready channels; most likely what held a virt-handler Pending through a whole spec,
	// with no event, in CI on a loaded 2-core machine).
	Timeout time.Duration

	mu sync.Mutex
	// results are the ADD results libcni would cache, by network name, container and interface.
	results map[string][]byte
}

// WriteWhereaboutsConf writes whereabouts' flat file naming the kubeconfig it uses, as its
// install does on every node (kubernetes.kubeconfig; reconciler and log settings left out).
func (p *Plugins) WriteWhereaboutsConf(kubeconfig string) error {
	if err := os.MkdirAll(p.ConfDir, 0o700); err != nil {
		return err
	}
	conf, err := json.Marshal(map[string]any{
		"datastore":  "kubernetes",
		"kubernetes": map[string]string{"kubeconfig": kubeconfig},
		"log_level":  "error",
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.ConfDir, "whereabouts.conf"), conf, 0o600)
}

// Request is one CNI call as Multus makes it for a pod's network.
type Request struct {
	// Command is ADD or DEL.
	Command string
	// Host is the node's host namespace, where the plugin runs.
	Host NS
	// Sandbox is the pod sandbox's namespace (CNI_NETNS).
	Sandbox                       NS
	ContainerID, IfName           string
	PodNamespace, PodName, PodUID string
	// Network is the NAD's namespace/name; its name becomes the config's "name".
	NetworkName string
	// Config is the NAD's spec.config.
	Config string
}

// Result is what an ADD returned (CNI 0.3.x / 1.x result; a list's is its last plugin's), as
// Multus copies it into the network-status annotation.
type Result struct {
	Interfaces []struct {
		Name    string `json:"name"`
		Mac     string `json:"mac"`
		Sandbox string `json:"sandbox,omitempty"`
	} `json:"interfaces"`
	IPs []struct {
		Address   string `json:"address"`
		Interface *int   `json:"interface,omitempty"`
	} `json:"ips"`
}

// Addr is the first address the plugin assigned to the sandbox's interface ifName.
func (r *Result) Addr(ifName string) (netip.Prefix, string, bool) {
	for _, a := range r.IPs {
		if a.Interface == nil || *a.Interface >= len(r.Interfaces) || r.Interfaces[*a.Interface].Name != ifName {
			continue
		}
		if p, err := netip.ParsePrefix(a.Address); err == nil {
			return p, r.Interfaces[*a.Interface].Mac, true
		}
	}
	return netip.Prefix{}, "", false
}

// PluginError is the error a plugin reported (the CNI error object on its stdout).
type PluginError struct {
	Code    int    `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details,omitempty"`
}

func (e *PluginError) Error() string {
	if e.Details != "" {
		return e.Msg + ": " + e.Details
	}
	return e.Msg
}

// Run makes one CNI call (ADD, DEL or CHECK) of the NAD's network as Multus makes it through
// libcni: the config resolved as Multus resolves it (delegate.Load: the NAD's name as "name" when
// the config has none; one plugin, or a plugin list), each plugin run in the node's host namespace
// (ip netns exec) inside a private mount namespace where ConfDir covers FlatFileDir, with the
// CNI_* environment Multus sets (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID,
// K8S_POD_UID in CNI_ARGS). A list runs as libcni runs it (delegate.Delegate's Add, Del, Check):
// ADD in order with each plugin's result handed on as prevResult, DEL in reverse order and CHECK
// in order, both given the ADD's result, which Plugins keeps as libcni's cache does (by network
// name, container and interface) until a DEL succeeds. ADD returns the last plugin's result.
func (p *Plugins) Run(ctx context.Context, req Request) (*Result, error) {
	d, err := p.load(req)
	if err != nil {
		return nil, err
	}
	run, key := p.runner(req), resultKey(d, req)
	switch req.Command {
	case "ADD":
		raw, err := d.Add(ctx, run)
		if err != nil {
			return nil, err
		}
		return p.keep(key, raw)
	case "DEL":
		if err := d.Del(ctx, run, p.cached(key)); err != nil {
			return nil, err
		}
		p.mu.Lock()
		delete(p.results, key)
		p.mu.Unlock()
		return nil, nil
	case "CHECK":
		return nil, d.Check(ctx, run, p.cached(key))
	}
	return nil, fmt.Errorf("CNI command %q: the lab's Multus runs ADD, DEL and CHECK", req.Command)
}

// Attach is Multus' ADD of the network: an ADD (req.Command is ignored), and when it fails a DEL
// of the same network, undoing what the plugins before the failing one made (delegate.Attach).
func (p *Plugins) Attach(ctx context.Context, req Request) (*Result, error) {
	d, err := p.load(req)
	if err != nil {
		return nil, err
	}
	req.Command = "ADD"
	raw, err := d.Attach(ctx, p.runner(req))
	if err != nil {
		return nil, err
	}
	return p.keep(resultKey(d, req), raw)
}

// load resolves the NAD's config; its name is the NAD's (NetworkName is namespace/name).
func (p *Plugins) load(req Request) (*delegate.Delegate, error) {
	_, name, _ := strings.Cut(req.NetworkName, "/")
	d, err := delegate.Load(req.Config, name)
	if err != nil {
		return nil, fmt.Errorf("network %s: %w", req.NetworkName, err)
	}
	return d, nil
}

// resultKey is where libcni caches a network's ADD result for one sandbox's interface.
func resultKey(d *delegate.Delegate, req Request) string {
	return d.Name + "/" + req.ContainerID + "/" + req.IfName
}

// keep caches an ADD's result and returns it decoded.
func (p *Plugins) keep(key string, raw []byte) (*Result, error) {
	res := &Result{}
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("ADD returned no result: %w: %s", err, raw)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.results == nil {
		p.results = map[string][]byte{}
	}
	p.results[key] = raw
	return res, nil
}

// cached is the ADD result kept for key, nil without one.
func (p *Plugins) cached(key string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.results[key]
}

// PluginTimeout is how long one plugin may run when Plugins.Timeout is 0: the lab's plugins
// answer within a second, so a run this long is stuck, not slow.
const PluginTimeout = 20 * time.Second

// runner runs one plugin binary for req: in the node's host namespace, in a private mount namespace
// where ConfDir covers FlatFileDir, within Timeout; a failure is the plugin's CNI error object
// when it printed one.
func (p *Plugins) runner(req Request) delegate.Exec {
	return func(ctx context.Context, typ, command string, stdin []byte) ([]byte, error) {
		if err := os.MkdirAll(FlatFileDir, 0o755); err != nil {
			return nil, fmt.Errorf("creating the mount point %s: %w", FlatFileDir, err)
		}
		timeout := cmp.Or(p.Timeout, PluginTimeout)
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		script := `mount --bind "$1" "$2" && exec ip netns exec "$3" "$4"`
		cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private",
			"sh", "-c", script, "sh", p.ConfDir, FlatFileDir, string(req.Host), filepath.Join(p.BinDir, typ))
		// Its own process group, killed whole at the deadline: an IPAM plugin the plugin started
		// holds the output pipes too, and would keep Wait waiting.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = time.Second
		cmd.Env = append(os.Environ(),
			"CNI_COMMAND="+command,
			"CNI_CONTAINERID="+req.ContainerID,
			"CNI_NETNS="+req.Sandbox.Path(),
			"CNI_IFNAME="+req.IfName,
			"CNI_PATH="+p.BinDir,
			"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE="+req.PodNamespace+";K8S_POD_NAME="+req.PodName+
				";K8S_POD_INFRA_CONTAINER_ID="+req.ContainerID+";K8S_POD_UID="+req.PodUID,
		)
		cmd.Stdin = bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s %s: no answer within %s, killed (%w): %s", typ, command, timeout, ctx.Err(), strings.TrimSpace(stderr.String()))
			}
			pe := &PluginError{}
			if json.Unmarshal(stdout.Bytes(), pe) == nil && pe.Msg != "" {
				return nil, pe
			}
			return nil, fmt.Errorf("%s %s: %w: %s%s", typ, command, err, strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
		}
		return stdout.Bytes(), nil
	}
}

// IsPluginError reports whether err is a plugin's own error, and which.
func IsPluginError(err error) (*PluginError, bool) {
	var pe *PluginError
	ok := errors.As(err, &pe)
	return pe, ok
}
