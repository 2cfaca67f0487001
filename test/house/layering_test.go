package house

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/migranet/migranet"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

// rule says which migranet packages the packages under from (only from itself when exact) may
// import: only those under one of may, none under mayNot; and, of other modules, none under
// noClient but those under clientOK.
type rule struct {
	from               string
	exact              bool
	may, mayNot        []string
	noClient, clientOK []string
	why                string
}

// apiClients are the modules that talk to an API server: what the pure packages never import.
var apiClients = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}

// writers are the settings subpackages that read or write the cluster.
var writers = []string{"settings/controller", "settings/clusterread", "settings/statuswrite"}

// layering is the house's one list of import rules (docs/architecture.md draws it). A package's
// own tests are held to its rule too; an external test package (package x_test) may reach up.
func layering() []rule {
	pure := "settings is the pure domain: it reads and writes nothing (the cluster reads live in settings/clusterread, the writers in settings/controller and settings/statuswrite)"
	return []rule{
		{from: "settings", exact: true, may: []string{"settings/v1beta1"}, noClient: apiClients, why: pure},
		{from: "settings/v1beta1", noClient: apiClients, clientOK: []string{"sigs.k8s.io/controller-runtime/pkg/scheme"},
			why: "settings/v1beta1 is the API's types: it imports no other migranet package and no API client"},
		{from: "settings/guard", may: []string{"settings"}, mayNot: writers, noClient: apiClients,
			why: "settings/guard is the guard's rule, pure: the settings controller writes its parameter"},
		{from: "settings/health", may: []string{"settings"}, mayNot: append([]string{"settings/decider", "settings/hcomode", "settings/harvestermode"}, writers...), noClient: apiClients,
			why: "settings/health concludes from what was observed (readiness, path health, the abort rule): pure, reaching down to the network and the policy only"},
		{from: "settings", may: []string{"settings"}, mayNot: []string{"settings/controller"},
			why: "settings' subpackages import only settings, and only cmd starts its controller"},
		{from: "settings/controller", may: []string{"settings"},
			why: "the settings controller imports only settings"},
		{from: "netcontroller", may: []string{"settings", "netcontroller"}, mayNot: []string{"settings/controller", "netcontroller/nodeagent"},
			why: "netcontroller reads the network on the nodes: it imports settings only, and reads the agents through their PathReports"},
		{from: "netcontroller/nodeagent", may: []string{"settings"}, mayNot: writers,
			why: "the per-node probe agent imports only the pure domain and the API types: never the network controller"},
		{from: "webhook", may: []string{"settings", "webhook"}, mayNot: []string{"settings/controller"},
			why: "webhook does not import netcontroller: what both need (the readiness snapshot) lives in settings"},
		{from: "webhook/migrationcheck", may: []string{"settings", "webhook/migrationcheck"},
			why: "the admission engine sits below the handlers: it never imports them"},
		{from: "manifests", why: "manifests embeds YAML and imports nothing of migranet"},
		{from: "cmd", may: []string{"settings", "netcontroller", "webhook", "manifests", "cmd"},
			why: "nothing imports test"},
	}
}

// under reports whether path (relative to the module) is dir or below it.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// violations checks every package against the most specific rule for it.
func violations(pkgs []pkg, rules []rule) []string {
	var out []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		var r *rule
		for i := range rules {
			applies := rel == rules[i].from || !rules[i].exact && under(rel, rules[i].from)
			if applies && (r == nil || len(rules[i].from) > len(r.from) || rules[i].exact && len(rules[i].from) == len(r.from)) {
				r = &rules[i]
			}
		}
		for _, imp := range append(append([]string(nil), p.Imports...), p.TestImports...) {
			if !strings.HasPrefix(imp, module+"/") {
				if r != nil && client(imp, r) {
					out = append(out, rel+" imports "+imp+": "+r.why)
				}
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if !under(rel, "test") && (under(dep, "test") || under(dep, "cmd") && !under(rel, "cmd")) {
				out = append(out, rel+" imports "+dep+": nothing outside test/ imports cmd or test")
				continue
			}
			if r == nil {
				continue
			}
			ok := false
			for _, m := range r.may {
				ok = ok || under(dep, m)
			}
			for _, m := range r.mayNot {
				ok = ok && !under(dep, m)
			}
			if !ok {
				out = append(out, rel+" imports "+dep+": "+r.why)
			}
		}
	}
	return out
}

// client reports whether imp is an API client r forbids.
func client(imp string, r *rule) bool {
	for _, ok := range r.clientOK {
		if under(imp, ok) {
			return false
		}
	}
	for _, c := range r.noClient {
		if under(imp, c) {
			return true
		}
	}
	return false
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayering: the fault it catches is an import that runs against the layering, e.g. webhook
// importing netcontroller or settings importing its controller.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: not the migranet module?", len(pkgs))
	}
	for _, v := range violations(pkgs, layering()) {
		t.Error(v)
	}
}

// TestLayeringRules: the rules themselves refuse what they must (a rule that admitted everything
// would keep TestLayering green).
func TestLayeringRules(t *testing.T) {
	p := func(path string, imports ...string) pkg {
		for i := range imports {
			imports[i] = module + "/" + imports[i]
		}
		return pkg{ImportPath: module + "/" + path, Imports: imports}
	}
	for _, tc := range []struct {
		name string
		p    pkg
		bad  bool
	}{
		{"webhook imports netcontroller", p("webhook", "netcontroller"), true},
		{"the engine imports its handlers", p("webhook/migrationcheck", "webhook"), true},
		{"settings imports its controller", p("settings", "settings/controller"), true},
		{"settings imports webhook", p("settings/guard", "webhook/migrationcheck"), true},
		{"the settings controller imports netcontroller", p("settings/controller", "netcontroller"), true},
		{"netcontroller imports the settings controller", p("netcontroller", "settings/controller"), true},
		{"netcontroller imports webhook", p("netcontroller", "webhook"), true},
		{"a product package imports test", p("webhook", "test/cluster"), true},
		{"webhook imports cmd", p("webhook", "cmd/migranet"), true},
		{"manifests imports settings", p("manifests", "settings"), true},
		{"the pure package reads the cluster", p("settings", "settings/clusterread"), true},
		{"the pure package imports a client", pkg{ImportPath: module + "/settings", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}}, true},
		{"the pure package imports client-go", pkg{ImportPath: module + "/settings", Imports: []string{"k8s.io/client-go/kubernetes/scheme"}}, true},
		{"the guard's rule imports a client", pkg{ImportPath: module + "/settings/guard", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}}, true},
		{"the API types register with the scheme builder", pkg{ImportPath: module + "/settings/v1beta1", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/scheme"}}, false},
		{"the API types import a client", pkg{ImportPath: module + "/settings/v1beta1", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}}, true},
		{"the cluster reads import a client", pkg{ImportPath: module + "/settings/clusterread", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client", module + "/settings"}}, false},
		{"the probe agent imports the network controller", p("netcontroller/nodeagent", "netcontroller"), true},
		{"the probe agent imports the cluster reads", p("netcontroller/nodeagent", "settings/clusterread"), true},
		{"the network controller imports the probe agent", p("netcontroller", "netcontroller/nodeagent"), true},
		{"the probe agent imports the pure domain", p("netcontroller/nodeagent", "settings", "settings/v1beta1"), false},
		{"webhook imports settings", p("webhook", "settings", "settings/v1beta1", "webhook/migrationcheck"), false},
		{"cmd imports everything", p("cmd/migranet", "settings/controller", "netcontroller", "webhook/certs", "manifests"), false},
		{"test imports everything", p("test/integration", "cmd/migranet", "test/cluster", "netcontroller"), false},
	} {
		if got := len(violations([]pkg{tc.p}, layering())) > 0; got != tc.bad {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.bad)
		}
	}
}
