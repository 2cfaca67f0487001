package openshift

import (
	"path/filepath"
	"strings"
	"testing"
)

// The workloads and the SCC each must run under on OpenShift.
var sccExpect = []string{
	"-expect", "Deployment/migranet-system/migranet=restricted-v2",
	"-expect", "DaemonSet/migranet-probe/migranet-probe=privileged",
}

// TestSCCs admits the manager's and the probe agent's pods as OpenShift's SCC admission does
// (scccheck: github.com/openshift/apiserver-library-go sccmatching, the restricted-v2 and
// privileged SCCs as OpenShift ships them, the manifests' RBAC), once as shipped and once per fault:
// each fault must fail, naming why.
func TestSCCs(t *testing.T) {
	scccheck := filepath.Join(tool(t, "openshift"), "scccheck")
	sccs := filepath.Join(root, "test", "tools", "openshift", "sccs")
	rendered := renderOpenShift(t)
	manager := func(fn func(t *testing.T, pod map[string]any)) func(t *testing.T, s []byte) []byte {
		return func(t *testing.T, s []byte) []byte {
			return edit(t, s, "Deployment", "migranet-system", "migranet", func(m map[string]any) { fn(t, at(t, m, "spec", "template", "spec")) })
		}
	}
	container := func(t *testing.T, pod map[string]any) map[string]any {
		return at(t, pod, "containers", 0, "securityContext")
	}
	cases := []struct {
		name   string
		fault  func(t *testing.T, s []byte) []byte
		expect string // "" passes; else a part of the failure
	}{
		{name: "as shipped"},
		{name: "manager with a fixed UID outside the namespace's range", expect: "must be in the ranges",
			fault: manager(func(t *testing.T, pod map[string]any) { at(t, pod, "securityContext")["runAsUser"] = 65532 })},
		{name: "manager with a fixed fsGroup outside the namespace's range", expect: "fsGroup",
			fault: manager(func(t *testing.T, pod map[string]any) { at(t, pod, "securityContext")["fsGroup"] = 65532 })},
		{name: "manager without the capability drop", expect: "only after it changed the pod",
			fault: manager(func(t *testing.T, pod map[string]any) { delete(container(t, pod), "capabilities") })},
		{name: "manager adding a capability", expect: "capability may not be added",
			fault: manager(func(t *testing.T, pod map[string]any) {
				container(t, pod)["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_ADMIN"}}
			})},
		{name: "manager allowing privilege escalation", expect: "Allowing privilege escalation for containers is not allowed",
			fault: manager(func(t *testing.T, pod map[string]any) { container(t, pod)["allowPrivilegeEscalation"] = true })},
		{name: "manager without allowPrivilegeEscalation false", expect: "only after it changed the pod",
			fault: manager(func(t *testing.T, pod map[string]any) { delete(container(t, pod), "allowPrivilegeEscalation") })},
		{name: "manager without the RuntimeDefault seccomp profile", expect: "only after it changed the pod",
			fault: manager(func(t *testing.T, pod map[string]any) { delete(at(t, pod, "securityContext"), "seccompProfile") })},
		{name: "manager on the host network", expect: "Host network is not allowed",
			fault: manager(func(t *testing.T, pod map[string]any) { pod["hostNetwork"] = true })},
		{name: "probe agent without its grant of privileged", expect: "no SCC admits its pod",
			fault: func(t *testing.T, s []byte) []byte {
				return edit(t, s, "RoleBinding", "migranet-probe", "migranet-probe-scc", nil)
			}},
		// Near misses: a grant of the right SCC to the wrong account, or of another SCC.
		{name: "grant of privileged bound to the manager's account instead", expect: "no SCC admits its pod",
			fault: func(t *testing.T, s []byte) []byte {
				return edit(t, s, "RoleBinding", "migranet-probe", "migranet-probe-scc", func(m map[string]any) {
					m["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": "migranet", "namespace": "migranet-system"}}
				})
			}},
		{name: "grant of another SCC", expect: "no SCC admits its pod",
			fault: func(t *testing.T, s []byte) []byte {
				return edit(t, s, "Role", "migranet-probe", "migranet-probe-scc", func(m map[string]any) {
					at(t, m, "rules", 0)["resourceNames"] = []any{"hostnetwork"}
				})
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stream := rendered
			if c.fault != nil {
				stream = c.fault(t, rendered)
			}
			code, out := runChecker(t, scccheck, append([]string{"-sccs", sccs, "-manifests", writeTemp(t, "rendered.yaml", stream)}, sccExpect...)...)
			switch {
			case c.expect == "" && code != 0:
				t.Fatalf("scccheck exit %d:\n%s", code, out)
			case c.expect != "" && code != 1:
				t.Fatalf("scccheck exit %d, want 1 (%q):\n%s", code, c.expect, out)
			case c.expect != "" && !strings.Contains(out, c.expect):
				t.Fatalf("scccheck's failure does not say %q:\n%s", c.expect, out)
			}
			t.Log(out)
		})
	}
}
