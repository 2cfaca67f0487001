package env

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/sim"
)

// Manager is one replica of the real migranet binary, running `migranet manager` as a child
// process the way the default overlay's Deployment runs it: as the manifests' ServiceAccount
// (Kubeconfig holds a token of it), with leader election, behind the webhook Service (here the
// Service simulator). Lease timings are about half the defaults, so a killed leader is replaced
// within seconds, yet long enough that a leader keeps its lease while a busy 2-core machine
// answers slowly; a cleanly stopped replica releases the lease at once.
type Manager struct {
	Binary, Kubeconfig, Dir string
	// Name tells replicas apart in logs and in the Service's endpoints.
	Name string
	// Service routes webhook traffic to the replica once it is ready.
	Service *sim.Service
	// ExtraArgs are appended to the command line.
	ExtraArgs []string

	webhookPort, probePort, metricsPort int
	starts                              int
	cmd                                 *exec.Cmd
	done                                chan struct{}
}

// WebhookURL is where this replica serves the webhooks.
func (m *Manager) WebhookURL() string { return "https://127.0.0.1:" + strconv.Itoa(m.webhookPort) }

// MetricsURL is this replica's authenticated metrics endpoint.
func (m *Manager) MetricsURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(m.metricsPort) + "/metrics"
}

// ReadyURL is this replica's readiness endpoint.
func (m *Manager) ReadyURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(m.probePort) + "/readyz"
}

// LogPath is the log of the current (or last) run.
func (m *Manager) LogPath() string {
	return filepath.Join(m.Dir, fmt.Sprintf("%s-%d.log", m.name(), m.starts))
}

func (m *Manager) name() string {
	if m.Name == "" {
		return "manager"
	}
	return m.Name
}

// Start runs the replica and waits until it is ready (webhook server started, serving
// certificate loaded from the Secret, CA bundle injected) and the Service routes to it. Ports stay the same across restarts.
func (m *Manager) Start(ctx context.Context) error {
	// A free port is picked by listening and closing, so another process can take it before the
	// replica binds it: such a start is retried on new ports, as a pod would get a new IP.
	for attempt := 1; ; attempt++ {
		err := m.start(ctx)
		if err == nil || attempt == 3 || !m.lostPort() {
			return err
		}
		<-m.done
		m.cmd, m.webhookPort = nil, 0
	}
}

// lostPort reports whether the replica's last run exited because a port was taken.
func (m *Manager) lostPort() bool {
	select {
	case <-m.done:
	default:
		return false
	}
	log, err := os.ReadFile(m.LogPath())
	return err == nil && strings.Contains(string(log), "address already in use")
}

func (m *Manager) start(ctx context.Context) error {
	if m.cmd != nil {
		return fmt.Errorf("manager already running")
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return err
	}
	if m.webhookPort == 0 {
		m.webhookPort, m.probePort, m.metricsPort = cluster.FreePort(), cluster.FreePort(), cluster.FreePort()
	}
	m.starts++
	logf, err := os.Create(m.LogPath())
	if err != nil {
		return err
	}
	args := []string{"manager", "--kubeconfig", m.Kubeconfig, "--namespace", Namespace,
		"--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(m.webhookPort),
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(m.probePort),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(m.metricsPort),
		"--leader-elect", "--leader-elect-lease-duration", "8s", "--leader-elect-renew-deadline", "6s",
		"--leader-elect-retry-period", "1s",
		// Twice the Service simulator's probe period: a stopping replica is drained first.
		"--shutdown-delay", "2s",
		"--guard-scan-interval", "2s",
		// The default overlay's certificate flags; the Service simulator is reached by IP.
		"--cert-secret", CertSecret, "--cert-rotation", "--cert-extra-sans", "127.0.0.1"}
	cmd := exec.Command(m.Binary, append(args, m.ExtraArgs...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	m.cmd, m.done = cmd, make(chan struct{})
	svc, name := m.Service, m.name()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		if svc != nil {
			svc.Unready(name) // the kubelet reports the container's exit
		}
		close(m.done)
	}()
	if m.Service != nil {
		m.Service.SetEndpoint(m.name(), "127.0.0.1:"+strconv.Itoa(m.webhookPort), m.ReadyURL())
	}
	if err := m.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	return m.waitRouted(ctx, 30*time.Second)
}

// waitRouted waits until the Service sends traffic to the replica, as `kubectl rollout status`
// waits for a pod to be Ready and listed in the endpoints.
func (m *Manager) waitRouted(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for m.Service != nil && !slices.Contains(m.Service.Ready(), m.name()) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the Service does not route to %s after %s; see %s", m.name(), timeout, m.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func (m *Manager) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	url := m.ReadyURL()
	for {
		select {
		case <-m.done:
			return fmt.Errorf("migranet exited during startup; see %s", m.LogPath())
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("migranet not ready after %s; see %s", timeout, m.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitWebhooksRegistered waits until the API server can reach this replica: the webhook
// configuration has a CA bundle and the Service routes to the replica.
func (m *Manager) WaitWebhooksRegistered(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: WebhookConfig}, cfg); err == nil && len(cfg.Webhooks) > 0 &&
			len(cfg.Webhooks[0].ClientConfig.CABundle) > 0 && (m.Service == nil || slices.Contains(m.Service.Ready(), m.name())) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("webhook configuration %s has no CA bundle or the Service does not route to %s; see %s", WebhookConfig, m.name(), m.LogPath())
}

// WaitOwnedSettings waits until the settings the manager creates at start exist.
func (m *Manager) WaitOwnedSettings(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range settings.OwnedSettings {
		for c.Get(ctx, client.ObjectKey{Name: name}, &v1beta1.Setting{}) != nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("setting %s not created by the manager within 30s; see %s", name, m.LogPath())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// Leads reports whether the current run of the replica has acquired the leader lease (controller-
// runtime logs it; the lease's holder identity is the host name plus a random suffix, the same
// host for every local replica). A leader that loses its lease exits.
func (m *Manager) Leads() bool {
	data, err := os.ReadFile(m.LogPath())
	return err == nil && strings.Contains(string(data), "successfully acquired lease")
}

// Exited reports whether the replica was started and its process has ended by itself (a crash,
// or leadership lost): the kubelet would restart it.
func (m *Manager) Exited() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// PID is the running replica's process ID, 0 when stopped.
func (m *Manager) PID() int {
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// RSS is the manager's resident set size in bytes, from /proc.
func (m *Manager) RSS() (int64, error) {
	if m.cmd == nil {
		return 0, fmt.Errorf("manager not running")
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", m.cmd.Process.Pid)
}

// Stop ends the manager gracefully (SIGTERM, then SIGKILL after 20 s).
func (m *Manager) Stop() { m.signal(syscall.SIGTERM, 20*time.Second) }

// Kill ends the manager at once, as a crash would.
func (m *Manager) Kill() { m.signal(syscall.SIGKILL, 0) }

func (m *Manager) signal(sig syscall.Signal, grace time.Duration) {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.done:
	case <-time.After(grace):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd = nil
}
