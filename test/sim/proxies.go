package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/nodenet"
)

// HandlerCerts are the files virt-handler's migration mTLS is made of: the KubeVirt CA bundle and
// virt-handler's server and client certificates with their keys (PEM), as virt-operator issues them
// from the KubeVirt CA (test/cluster writes them).
type HandlerCerts struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// MigrationProxyPort is where a lab migration proxy serves its metrics inside its sandbox, as
// virt-handler serves /metrics on its pod's port 8443 (HTTPS).
const MigrationProxyPort = 8443

// BuildLabProxy builds the lab's migration proxy if it is not built yet (`vendor-patches/run.sh
// lab-proxy`: the v1.9.0 series applied, harness/labproxy compiled; cached afterwards) and returns
// its path; the script's progress goes to progress. MIGRANET_LAB_PROXY, when set, names a binary
// to use instead (a proxy built with a fault, for a mutation run).
func BuildLabProxy(ctx context.Context, progress io.Writer) (string, error) {
	if bin := os.Getenv(LabProxyVar); bin != "" {
		return bin, nil
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(cluster.RepoRoot(), "vendor-patches", "run.sh"), "lab-proxy")
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(progress, &stderr)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("vendor-patches/run.sh lab-proxy: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// LabProxyVar names a labproxy binary to run instead of the one run.sh builds.
const LabProxyVar = "MIGRANET_LAB_PROXY"

// MigrationProxies runs the lab's patched migration proxies: vendor-patches' labproxy (the
// patched KubeVirt v1.9.0 migration-proxy package, built by `vendor-patches/run.sh lab-proxy`),
// one process per virt-handler sandbox, started in the sandbox's network namespace the first time a
// migration needs it, as virt-handler's proxy runs in its pod: its target listeners bind the
// sandbox's migration0 address, source and target talk mTLS with Certs, and it serves the proxy's
// metrics on MigrationProxyPort. A process that exited (Kill) is started again on the next use, as
// a restarted virt-handler starts a new proxy. Close ends them all.
type MigrationProxies struct {
	// Binary is labproxy; Certs virt-handler's certificates; Dir holds one log per node
	// (labproxy-<node>.log) and the launchers' socket directories.
	Binary string
	Certs  HandlerCerts
	Dir    string

	mu      sync.Mutex
	nodes   map[nodenet.NS]*NodeProxy
	sockets string // SocketDir's base
	dirs    int
}

// SocketDir is a new, short directory for one migration's launcher sockets (a unix socket's path
// holds at most 107 bytes, and the proxy's names carry the VMI's UID): a numbered directory in a
// base made in the system's temporary directory, removed by Close.
func (p *MigrationProxies) SocketDir() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sockets == "" {
		d, err := os.MkdirTemp("", "mnp")
		if err != nil {
			return "", err
		}
		p.sockets = d
	}
	p.dirs++
	d := filepath.Join(p.sockets, strconv.Itoa(p.dirs))
	return d, os.Mkdir(d, 0o755)
}

// Node is the proxy of node's virt-handler sandbox ns, started if it is not running.
func (p *MigrationProxies) Node(ns nodenet.NS, node string) (*NodeProxy, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.nodes[ns]; n != nil && n.alive() {
		return n, nil
	}
	n, err := startNodeProxy(p.Binary, p.Certs, ns, node, filepath.Join(p.Dir, "labproxy-"+node+".log"))
	if err != nil {
		return nil, fmt.Errorf("the migration proxy of %s: %w", node, err)
	}
	if p.nodes == nil {
		p.nodes = map[nodenet.NS]*NodeProxy{}
	}
	p.nodes[ns] = n
	return n, nil
}

// Close ends every proxy process.
func (p *MigrationProxies) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ns, n := range p.nodes {
		n.Kill()
		delete(p.nodes, ns)
	}
	if p.sockets != "" {
		_ = os.RemoveAll(p.sockets)
		p.sockets = ""
	}
}

// NodeProxy is one running labproxy process.
type NodeProxy struct {
	// Node is the node whose virt-handler it plays, NS its sandbox, Bind the migration0 address
	// its target listeners bind, PID its process.
	Node string
	NS   nodenet.NS
	Bind string
	PID  int

	cmd     *exec.Cmd
	in      io.WriteCloser
	answers chan []byte
	exited  chan struct{}
	mu      sync.Mutex // one request at a time
}

// proxyAnswerTimeout bounds the wait for one answer; a proxy that does not answer is killed.
const proxyAnswerTimeout = 30 * time.Second

func startNodeProxy(bin string, c HandlerCerts, ns nodenet.NS, node, logPath string) (*NodeProxy, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("ip", "netns", "exec", string(ns), bin, "-ca", c.CA, "-server-cert", c.ServerCert, "-server-key", c.ServerKey,
		"-client-cert", c.ClientCert, "-client-key", c.ClientKey, "-metrics", fmt.Sprintf(":%d", MigrationProxyPort))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = logFile
	in, err := cmd.StdinPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	n := &NodeProxy{Node: node, NS: ns, cmd: cmd, in: in, answers: make(chan []byte, 1), exited: make(chan struct{})}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(n.answers)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			n.answers <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	go func() {
		<-readerDone
		_ = cmd.Wait()
		logFile.Close()
		close(n.exited)
	}()
	var r struct {
		Bind string `json:"bind"`
		PID  int    `json:"pid"`
	}
	if err := n.answer(&r, 20*time.Second); err != nil {
		n.Kill()
		return nil, fmt.Errorf("%w (its log: %s)", err, logPath)
	}
	n.Bind, n.PID = r.Bind, r.PID
	return n, nil
}

// answer decodes the next line into v within timeout.
func (n *NodeProxy) answer(v any, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-n.answers:
		if !ok {
			return errors.New("the proxy process exited")
		}
		return json.Unmarshal(line, v)
	case <-t.C:
		_ = n.cmd.Process.Kill()
		return fmt.Errorf("no answer in %s (killed)", timeout)
	}
}

func (n *NodeProxy) alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Kill ends the process at once (SIGKILL: virt-handler's proxy gone mid-migration, as when
// virt-handler restarts) and waits for it.
func (n *NodeProxy) Kill() {
	_ = n.cmd.Process.Kill()
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
	}
}

// proxyRequest and proxyResponse are labproxy's protocol (vendor-patches/harness/labproxy).
type proxyRequest struct {
	Op         string         `json:"op"`
	Key        string         `json:"key,omitempty"`
	Root       string         `json:"root,omitempty"`
	Sockets    []string       `json:"sockets,omitempty"`
	Addr       string         `json:"addr,omitempty"`
	Ports      map[string]int `json:"ports,omitempty"`
	Dir        string         `json:"dir,omitempty"`
	DisableTLS bool           `json:"disableTLS,omitempty"`
}

type proxyResponse struct {
	Err      string             `json:"err,omitempty"`
	Ports    map[string]int     `json:"ports,omitempty"`
	Files    []string           `json:"files,omitempty"`
	Bytes    map[string]float64 `json:"bytes,omitempty"`
	CPU      int64              `json:"cpu,omitempty"`
	Switches int64              `json:"switches,omitempty"`
	Procs    int                `json:"procs,omitempty"`
}

func (n *NodeProxy) do(req proxyRequest) (proxyResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var r proxyResponse
	b, err := json.Marshal(req)
	if err != nil {
		return r, err
	}
	if _, err := n.in.Write(append(b, '\n')); err != nil {
		return r, fmt.Errorf("the migration proxy of %s: %w", n.Node, err)
	}
	if err := n.answer(&r, proxyAnswerTimeout); err != nil {
		return r, fmt.Errorf("the migration proxy of %s, %s: %w", n.Node, req.Op, err)
	}
	if r.Err != "" {
		return r, fmt.Errorf("the migration proxy of %s, %s: %s", n.Node, req.Op, r.Err)
	}
	return r, nil
}

// StartTarget starts key's target listeners (StartTargetListener), forwarding to sockets, each
// below root, the target launcher's mount root; it returns the listeners' ports → proxy keys.
func (n *NodeProxy) StartTarget(key, root string, sockets []string, disableTLS bool) (map[string]int, error) {
	r, err := n.do(proxyRequest{Op: "start-target", Key: key, Root: root, Sockets: sockets, DisableTLS: disableTLS})
	return r.Ports, err
}

// StartSource starts key's source listeners (StartSourceListener): unix sockets below dir, each
// dialling addr at the port of its proxy key; it returns the sockets' paths.
func (n *NodeProxy) StartSource(key, addr string, ports map[string]int, dir string, disableTLS bool) ([]string, error) {
	r, err := n.do(proxyRequest{Op: "start-source", Key: key, Addr: addr, Ports: ports, Dir: dir, DisableTLS: disableTLS})
	return r.Files, err
}

// Stop stops key's source and target listeners (StopSourceListener, StopTargetListener): the
// proxy deletes key's metric series.
func (n *NodeProxy) Stop(key string) error {
	_, err := n.do(proxyRequest{Op: "stop", Key: key})
	return err
}

// Bytes is the proxy's kubevirt_vmi_migration_proxy_transferred_bytes_total for key, per
// "side/direction/port_key".
func (n *NodeProxy) Bytes(key string) (map[string]float64, error) {
	r, err := n.do(proxyRequest{Op: "bytes", Key: key})
	return r.Bytes, err
}

// CPU is the process's CPU time so far (user + system, all threads).
func (n *NodeProxy) CPU() (time.Duration, error) {
	r, err := n.do(proxyRequest{Op: "cpu"})
	return time.Duration(r.CPU), err
}
