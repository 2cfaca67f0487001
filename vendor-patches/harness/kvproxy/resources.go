package kvproxy

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// OpenFDs counts this process's open file descriptors that are sockets or pipes.
func OpenFDs() (int, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the fd of ReadDir itself, gone by now
		}
		if strings.HasPrefix(target, "socket:") || strings.HasPrefix(target, "pipe:") {
			n++
		}
	}
	return n, nil
}

// Goroutines is the number of live goroutines.
func Goroutines() int { return runtime.NumGoroutine() }

// proxyPackage is in the stack of every goroutine the migration proxy runs.
const proxyPackage = "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy."

// ProxyGoroutines counts the goroutines running the migration proxy's code: the
// proxy's own, whatever else the process runs.
func ProxyGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, proxyPackage) {
			count++
		}
	}
	return count
}

// ProxyBytes sums kubevirt_vmi_migration_proxy_transferred_bytes_total for uid
// per "side/direction/port_key".
func ProxyBytes(uid string) (map[string]float64, error) {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "kubevirt_vmi_migration_proxy_transferred_bytes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["uid"] != uid {
				continue
			}
			out[labels["side"]+"/"+labels["direction"]+"/"+labels["port_key"]] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// UserSpaceBytes is rchar + wchar of /proc/self/io: the bytes this process has
// passed through read(2)/write(2)-type system calls (sockets included). splice(2)
// is not counted, so a proxy that forwards in the kernel leaves it unchanged.
func UserSpaceBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "rchar" && k != "wchar") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/io: %w", err)
		}
		total += n
	}
	return total, nil
}
