package sim

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestLivenessWatch runs the kubelet stand-in's liveness probe against a loopback server that
// answers a script of statuses (0: no answer within the timeout), then 200 for ever.
// Catches: a restart on failures not in a row (the near miss: two, a success, two), a timeout
// not counted as a failure (a stopped agent never restarted), a 3xx taken for a failure, a
// threshold off by one.
func TestLivenessWatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  []int
		restart bool
	}{
		{"three failures in a row", []int{200, 500, 503, 500}, true},
		{"two, a success, two: alive", []int{500, 500, 200, 500, 500}, false},
		{"two failures only", []int{500, 500}, false},
		{"no answer counts as a failure", []int{0, 0, 0}, true},
		{"a redirect's status is a success", []int{399, 399, 399, 399}, false},
		{"400 is a failure", []int{400, 400, 400}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/healthz" {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				mu.Lock()
				code := 200
				if n < len(tc.script) {
					code = tc.script[n]
				}
				n++
				mu.Unlock()
				if code == 0 {
					time.Sleep(100 * time.Millisecond)
					code = 200
				}
				w.WriteHeader(code)
			}))
			defer srv.Close()
			l := liveness{path: "/healthz", period: 5 * time.Millisecond, timeout: 40 * time.Millisecond, threshold: 3}
			done := make(chan struct{})
			restarted := make(chan string, 1)
			go l.watch(srv.URL, done, func(why string) { restarted <- why })
			// The script, then as many successes: a restart comes within it or never.
			deadline := time.After(time.Duration(2*len(tc.script)+4) * 60 * time.Millisecond)
			select {
			case why := <-restarted:
				if !tc.restart {
					t.Fatalf("restarted (%s), want alive", why)
				}
			case <-deadline:
				if tc.restart {
					t.Fatal("not restarted")
				}
			}
			close(done)
		})
	}
}

// TestLivenessOf reads a container's probe with the kubelet's defaults for unset fields.
// Catches: a zero period or threshold taken as is (a probe every instant, a restart on the first
// failure), an exec or TCP probe run as HTTP.
func TestLivenessOf(t *testing.T) {
	get := &corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("health")}}
	for _, tc := range []struct {
		name  string
		probe *corev1.Probe
		want  liveness
		ok    bool
	}{
		{"the DaemonSet's", &corev1.Probe{ProbeHandler: *get, PeriodSeconds: 20, FailureThreshold: 3},
			liveness{path: "/healthz", period: 20 * time.Second, timeout: time.Second, threshold: 3}, true},
		{"defaults", &corev1.Probe{ProbeHandler: *get},
			liveness{path: "/healthz", period: 10 * time.Second, timeout: time.Second, threshold: 3}, true},
		{"a delay and a timeout", &corev1.Probe{ProbeHandler: *get, InitialDelaySeconds: 5, TimeoutSeconds: 2, FailureThreshold: 1},
			liveness{path: "/healthz", delay: 5 * time.Second, period: 10 * time.Second, timeout: 2 * time.Second, threshold: 1}, true},
		{"none", nil, liveness{}, false},
		{"an exec probe", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}, liveness{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := livenessOf(corev1.Container{LivenessProbe: tc.probe})
			if ok != tc.ok || got != tc.want {
				t.Fatalf("livenessOf = %+v, %t; want %+v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}
