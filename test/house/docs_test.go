package house

import (
	"flag"
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
