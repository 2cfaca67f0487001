package sim

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// streamVia is the patched proxy pair a Stream crosses: the target node's proxy (listening on its
// migration0 address, forwarding to the stand-in's target "QEMU" sockets) and, once the stream
// starts, the source node's (its unix sockets dialling the target's listeners).
type streamVia struct {
	key, dir       string // the proxy key (the VMI's UID), the migration's socket directory
	disableTLS     bool
	target, source *NodeProxy
	// final is both proxies' byte counts of key, read as the stream closed (Stream.mu).
	final map[string]float64
}

// ListenStreamVia is ListenStream through the patched proxy pair: the stand-in's target "QEMU"
// listens on unix sockets below dir/t, the target launcher's mount root (virtqemud-sock for
// libvirt's connection, mp/<key>-<port>-source.sock per port, named as the launcher's are so the
// proxy tells the ports apart; dir must be short: a socket's path has at most 107 bytes, see
// MigrationProxies.SocketDir), and target's proxy starts key's target listeners to them (StartTargetListener): bound to
// the node's migration0 address, one port per proxy key. key is the VMI's UID, as virt-handler keys
// its proxies; disableTLS is the KubeVirt CR's migrations.disableTLS.
func ListenStreamVia(target *NodeProxy, key, dir string, block, disableTLS bool) (*Stream, error) {
	s := &Stream{ports: map[string]int{}, ended: make(chan struct{}),
		via: &streamVia{key: key, dir: dir, disableTLS: disableTLS, target: target}}
	root := filepath.Join(dir, "t")
	keys := []int{ProxyKeyLibvirt, ProxyKeyDirectMigration}
	if block {
		keys = append(keys, ProxyKeyBlockMigration)
	}
	var sockets []string
	for _, k := range keys {
		path := filepath.Join(root, "virtqemud-sock")
		if k != ProxyKeyLibvirt {
			path = filepath.Join(root, "mp", fmt.Sprintf("%s-%d-source.sock", key, k))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			s.Close()
			return nil, err
		}
		ln, err := net.Listen("unix", path)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("the target launcher's socket: %w", err)
		}
		s.listeners = append(s.listeners, ln)
		sockets = append(sockets, path)
		go s.accept(ln, k == ProxyKeyDirectMigration)
	}
	ports, err := target.StartTarget(key, root, sockets, disableTLS)
	if err != nil {
		s.Close()
		return nil, err
	}
	if len(ports) != len(keys) {
		s.Close()
		return nil, fmt.Errorf("the target proxy of %s listens on %v, want a port for each of %v", target.Node, ports, keys)
	}
	s.ports = ports
	return s, nil
}

// StartVia is Start through the patched proxy pair: source's proxy starts the migration's source
// listeners (StartSourceListener: unix sockets in the migration's dir/s/migrationproxy, each dialling the
// target's address at the port of its key, with mTLS unless disabled), and the stand-in's source
// "QEMU" connects to them (libvirt's connection first, then the memory stream). A stream made by
// ListenStream (no target proxy) cannot start through a pair and fails.
func (s *Stream) StartVia(source *NodeProxy, target netip.Addr, plan StreamPlan, opts MigrationOptions, dataGB int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	if s.via == nil {
		s.failStartLocked(failedPrefix + "the target listens without a migration proxy")
		return
	}
	via := s.via
	via.source = source
	dir := filepath.Join(via.dir, "s")
	var files []string
	s.startLocked(plan, opts, dataGB, func(ctx context.Context, key int) (net.Conn, error) {
		if files == nil {
			var err error
			if files, err = source.StartSource(via.key, target.String(), s.ports, dir, via.disableTLS); err != nil {
				return nil, err
			}
		}
		name := via.key + "-source.sock"
		if key != ProxyKeyLibvirt {
			name = via.key + "-" + strconv.Itoa(key) + "-source.sock"
		}
		for _, f := range files {
			if strings.HasSuffix(f, "/"+name) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", f)
			}
		}
		return nil, fmt.Errorf("the source proxy of %s made no socket %s: %v", source.Node, name, files)
	})
}

// stop reads both proxies' byte counts of the migration, then stops its listeners on both.
func (v *streamVia) stop() map[string]float64 {
	final := map[string]float64{}
	for _, p := range []*NodeProxy{v.source, v.target} {
		if p == nil {
			continue
		}
		if b, err := p.Bytes(v.key); err == nil {
			maps.Copy(final, b)
		}
		_ = p.Stop(v.key)
	}
	return final
}

// The two paths a stream can take (Stream.Path).
const (
	PathPlain = "plain TCP"
	PathPair  = "the patched migration proxy pair"
)

// Path says which way the stream's bytes go: PathPlain or PathPair.
func (s *Stream) Path() string {
	if s.via != nil {
		return PathPair
	}
	return PathPlain
}

// failStart ends a stream that could not start (its source proxy did not run) with reason.
func (s *Stream) failStart(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started && !s.closed {
		s.failStartLocked(reason)
	}
}

// failStartLocked: s.mu held.
func (s *Stream) failStartLocked(reason string) {
	s.started, s.began, s.failure = true, time.Now(), reason
	s.endOnce.Do(func() { s.endedAt = time.Now(); close(s.ended) })
}
