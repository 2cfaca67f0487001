package nodenet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FlatFileDir is where whereabouts looks for its flat-file configuration on a node (one of the
// paths GetFlatIPAM tries), and so where Plugins mounts its own for the plugin's process.
const FlatFileDir = "/etc/cni/net.d/whereabouts.d"

// Plugins runs the real CNI plugins of one local cluster.
type Plugins struct {
	// BinDir holds the bridge and whereabouts binaries (CNI_PATH).
	BinDir string
	// ConfDir is mounted on FlatFileDir for every plugin run; WriteWhereaboutsConf fills it.
	ConfDir string
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

// Result is what an ADD returned (CNI 0.3.x / 1.x result), as Multus copies it into the
// network-status annotation.
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

// Run makes the CNI call: the plugin named by the config's "type", in the node's host namespace
// (ip netns exec) inside a private mount namespace where ConfDir covers FlatFileDir, with the
// NAD's config plus "name" on stdin and the CNI_* environment Multus sets (K8S_POD_NAMESPACE,
// K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID in CNI_ARGS).
func (p *Plugins) Run(ctx context.Context, req Request) (*Result, error) {
	var conf map[string]any
	if err := json.Unmarshal([]byte(req.Config), &conf); err != nil {
		return nil, fmt.Errorf("the network's config is not JSON: %w", err)
	}
	if _, ok := conf["name"]; !ok {
		_, name, _ := strings.Cut(req.NetworkName, "/")
		conf["name"] = name
	}
	typ, _ := conf["type"].(string)
	if typ == "" || strings.ContainsAny(typ, "/.") {
		return nil, fmt.Errorf("the network's config names no plugin type")
	}
	stdin, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(FlatFileDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the mount point %s: %w", FlatFileDir, err)
	}
	script := `mount --bind "$1" "$2" && exec ip netns exec "$3" "$4"`
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private",
		"sh", "-c", script, "sh", p.ConfDir, FlatFileDir, string(req.Host), filepath.Join(p.BinDir, typ))
	cmd.Env = append(os.Environ(),
		"CNI_COMMAND="+req.Command,
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
	runErr := cmd.Run()
	if runErr != nil {
		pe := &PluginError{}
		if json.Unmarshal(stdout.Bytes(), pe) == nil && pe.Msg != "" {
			return nil, pe
		}
		return nil, fmt.Errorf("%s %s: %w: %s%s", typ, req.Command, runErr, strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
	}
	if req.Command != "ADD" {
		return nil, nil
	}
	res := &Result{}
	if err := json.Unmarshal(stdout.Bytes(), res); err != nil {
		return nil, fmt.Errorf("%s ADD returned no result: %w: %s", typ, err, stdout.String())
	}
	return res, nil
}

// IsPluginError reports whether err is a plugin's own error, and which.
func IsPluginError(err error) (*PluginError, bool) {
	var pe *PluginError
	ok := errors.As(err, &pe)
	return pe, ok
}
