package nodenet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// NS is a named network namespace, as `ip netns` names them (/run/netns/<name>).
type NS string

// Path is the namespace's file, what CNI_NETNS names.
func (n NS) Path() string { return "/run/netns/" + string(n) }

// run runs a command and returns its output; a failure carries the command and its output.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.Bytes(), nil
}

// ip runs `ip args...`.
func ip(ctx context.Context, args ...string) error {
	_, err := run(ctx, "ip", args...)
	return err
}

// AddNS creates a network namespace with its loopback up; an existing one is left as it is.
func AddNS(ctx context.Context, n NS) error {
	if Exists(n) {
		return nil
	}
	if err := ip(ctx, "netns", "add", string(n)); err != nil {
		return err
	}
	return ip(ctx, "-n", string(n), "link", "set", "lo", "up")
}

// Exists reports whether the namespace exists.
func Exists(n NS) bool {
	_, err := os.Stat(n.Path())
	return err == nil
}

// DelNS deletes a network namespace and every link in it; a missing one is no error.
func DelNS(ctx context.Context, n NS) error {
	if !Exists(n) {
		return nil
	}
	return ip(ctx, "netns", "del", string(n))
}

// Exec runs a command inside a namespace (ip netns exec) and returns its output.
func Exec(ctx context.Context, n NS, name string, args ...string) ([]byte, error) {
	return run(ctx, "ip", append([]string{"netns", "exec", string(n), name}, args...)...)
}

// Available reports what this machine lacks to run real node networks: a command, or the
// privilege to create network namespaces (it creates and deletes one named probe).
func Available(ctx context.Context, probe NS) error {
	for _, c := range []struct{ cmd, pkg string }{{"ip", "iproute2"}, {"unshare", "util-linux"}, {"mount", "mount"}, {"ping", "iputils-ping"}, {"nft", "nftables"}} {
		if _, err := exec.LookPath(c.cmd); err != nil {
			return fmt.Errorf("the command %s is missing (apt-get install %s)", c.cmd, c.pkg)
		}
	}
	if err := AddNS(ctx, probe); err != nil {
		return fmt.Errorf("cannot create a network namespace (needs root, or CAP_SYS_ADMIN and CAP_NET_ADMIN): %w", err)
	}
	return DelNS(ctx, probe)
}
