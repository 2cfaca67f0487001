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

// rule says which migranet packages the packages under from may import: only those under one of
// may, none under mayNot.
type rule struct {
	from        string
	may, mayNot []string
	why         string
}

// layering is the house's one list of import rules (docs/architecture.md draws it). A package's
// own tests are held to its rule too; an external test package (package x_test) may reach up.
func layering() []rule {
	return []rule{
		{from: "settings", may: []string{"settings"}, mayNot: []string{"settings/controller"},
			why: "settings is the pure domain and the API: it imports no other migranet package, and only cmd starts its controller"},
		{from: "settings/controller", may: []string{"settings"},
			why: "the settings controller imports only settings"},
		{from: "netcontroller", may: []string{"settings", "netcontroller"}, mayNot: []string{"settings/controller"},
			why: "netcontroller reads the network on the nodes: it imports settings only"},
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
			if under(rel, rules[i].from) && (r == nil || len(rules[i].from) > len(r.from)) {
				r = &rules[i]
			}
		}
		for _, imp := range append(append([]string(nil), p.Imports...), p.TestImports...) {
			if !strings.HasPrefix(imp, module+"/") {
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
		{"webhook imports settings", p("webhook", "settings", "settings/v1beta1", "webhook/migrationcheck"), false},
		{"cmd imports everything", p("cmd/migranet", "settings/controller", "netcontroller", "webhook/certs", "manifests"), false},
		{"test imports everything", p("test/integration", "cmd/migranet", "test/cluster", "netcontroller"), false},
	} {
		if got := len(violations([]pkg{tc.p}, layering())) > 0; got != tc.bad {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.bad)
		}
	}
}
