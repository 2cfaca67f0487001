package house

import (
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migranet/migranet/settings"
)

var update = flag.Bool("update", false, "rewrite the generated parts of docs/ (make docs)")

const (
	rulesDoc   = "docs/settings-and-admission.md"
	tableBegin = "<!-- rule-table:begin -->"
	tableEnd   = "<!-- rule-table:end -->"
)

// TestRuleTableInDocs: the fault it catches is a rule added to, or changed in, the registry
// (settings/rules.go) without the docs' table following. `make docs` rewrites the table.
func TestRuleTableInDocs(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(top)), rulesDoc)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %s … %s section", rulesDoc, tableBegin, tableEnd)
	}
	want := tableBegin + "\n" + settings.RuleTable() + tableEnd
	if got := doc[begin : end+len(tableEnd)]; got != want {
		if *update {
			if err := os.WriteFile(path, []byte(doc[:begin]+want+doc[end+len(tableEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's rule table is not the registry's; run make docs. Want:\n%s", rulesDoc, want)
	}
}

// TestArchitectureNamesEveryFile: docs/architecture.md names every source file of the product's
// packages, so a newcomer reading it finds each file's place (package docs, RBAC markers and
// generated code aside). The fault it catches: a file added, moved or renamed without the page
// (a review once found six missing).
func TestArchitectureNamesEveryFile(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	n := 0
	for _, top := range []string{"settings", "netcontroller", "webhook", "cmd", "manifests"} {
		err := filepath.WalkDir(filepath.Join("..", "..", top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			name := d.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "doc.go" || name == "rbac.go" ||
				strings.HasPrefix(name, "zz_generated") {
				return nil
			}
			n++
			if !strings.Contains(string(page), "`"+name+"`") && !strings.Contains(string(page), "/"+name+"`") {
				missing = append(missing, strings.TrimPrefix(path, filepath.Join("..", "..")+"/"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 50 {
		t.Fatalf("found %d source files: not the migranet tree?", n)
	}
	for _, m := range missing {
		t.Errorf("docs/architecture.md does not name %s", m)
	}
}
