package sim

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// liveness is a container's liveness probe as the kubelet runs it (pkg/kubelet/prober's worker:
// an HTTP GET every period after the initial delay, a failure being no answer within the timeout
// or a status outside 200-399; failureThreshold failures in a row restart the container). kwok
// runs no probes, so without this a hung agent would never be restarted in the local cluster.
type liveness struct {
	path                   string
	delay, period, timeout time.Duration
	threshold              int
}

// livenessOf returns c's liveness probe with the kubelet's defaults (period 10 s, timeout 1 s,
// threshold 3), false when it has none or not an HTTP GET one.
func livenessOf(c corev1.Container) (liveness, bool) {
	p := c.LivenessProbe
	if p == nil || p.HTTPGet == nil {
		return liveness{}, false
	}
	l := liveness{path: p.HTTPGet.Path, delay: seconds(p.InitialDelaySeconds, 0), period: seconds(p.PeriodSeconds, 10),
		timeout: seconds(p.TimeoutSeconds, 1), threshold: int(p.FailureThreshold)}
	if l.threshold <= 0 {
		l.threshold = 3
	}
	return l, true
}

// seconds is s seconds, def when s is not positive (the API server's defaulting, which a pod
// written straight into the stand-in's cache may lack).
func seconds(s int32, def int) time.Duration {
	if s <= 0 {
		return time.Duration(def) * time.Second
	}
	return time.Duration(s) * time.Second
}

// watch probes base+l.path until done is closed; after l.threshold failures in a row it calls
// restart with why and returns (the restarted process gets a watch of its own).
func (l liveness) watch(base string, done <-chan struct{}, restart func(why string)) {
	hc := &http.Client{Timeout: l.timeout}
	wait := l.delay
	failures := 0
	for {
		select {
		case <-done:
			return
		case <-time.After(wait):
		}
		wait = l.period
		err := l.check(hc, base+l.path)
		if err == nil {
			failures = 0
			continue
		}
		if failures++; failures >= l.threshold {
			restart(fmt.Sprintf("liveness probe %s failed %d times in a row: %v", l.path, failures, err))
			return
		}
	}
}

// check is one probe: nil on an answer 200-399.
func (l liveness) check(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		// The kubelet records the start of the body with the failure; so does the restart line.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
