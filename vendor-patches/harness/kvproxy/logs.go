package kvproxy

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"kubevirt.io/client-go/log"
)

// refusalMessage starts the line the patched proxy logs when it refuses an
// inbound connection whose TLS handshake failed (patch 0002, handleConnection).
const refusalMessage = "refused inbound migration connection"

// ProxyLog receives KubeVirt's log lines (JSON, one per line), passes them on
// and remembers the proxy's refusals per VMI uid: the server side's own word that
// it turned a client away.
type ProxyLog struct {
	mu       sync.Mutex
	next     io.Writer
	partial  []byte
	refusals map[string]int
}

// CaptureLogs sends KubeVirt's log (log.Log) through a ProxyLog that writes on to
// next. Call it before building any proxy: each proxy copies the logger.
func CaptureLogs(next io.Writer) *ProxyLog {
	l := &ProxyLog{next: next, refusals: map[string]int{}}
	log.Log.SetIOWriter(l)
	return l
}

func (l *ProxyLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if strings.Contains(line, refusalMessage) {
			l.refusals[uidOf(line)]++
		}
	}
	if l.next != nil {
		return l.next.Write(p)
	}
	return len(p), nil
}

// Refusals is how many inbound connections the proxy of uid refused so far.
func (l *ProxyLog) Refusals(uid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refusals[uid]
}

func uidOf(line string) string {
	const k = `"uid":"`
	i := strings.Index(line, k)
	if i < 0 {
		return ""
	}
	rest := line[i+len(k):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}
