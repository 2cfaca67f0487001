package status

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// listing is a mixed set of migrations in two namespaces, unsorted.
func listing() []Row {
	mk := func(ns, name string, created time.Duration, opts ...vmimOpt) Row {
		m := newVMIM(opts...)
		m.Namespace, m.Name, m.UID, m.CreationTimestamp = ns, name, types.UID(ns+"-"+name), *ago(created)
		vmi := newVMI(vmiState(mode(kubevirtv1.MigrationPreCopy), func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
			s.MigrationUID = m.UID
		}))
		if m.Status.Phase != kubevirtv1.MigrationRunning {
			vmi.Status.MigrationState = nil
		}
		return Combine(m, vmi, now)
	}
	return []Row{
		mk("apps", "done-old", 2*time.Hour, phase(kubevirtv1.MigrationSucceeded), transition(kubevirtv1.MigrationSucceeded, ago(110*time.Minute))),
		mk("db", "queued", time.Minute),
		mk("apps", "moving", 4*time.Minute, phase(kubevirtv1.MigrationRunning)),
		mk("apps", "broke", 30*time.Minute, phase(kubevirtv1.MigrationFailed)),
		mk("apps", "another-queued", time.Minute),
	}
}

func TestPrintTableGolden(t *testing.T) {
	nad := nadOf(t, netValue)
	net := Header(newSetting(netValue, applied(nad), nodes(3, 3), capacity(3, 253),
		cond("Ready", metav1.ConditionTrue, "AllNodesAttached", "")))
	for _, all := range []bool{false, true} {
		name := "print-namespace"
		if all {
			name = "print-all-namespaces"
		}
		t.Run(name, func(t *testing.T) {
			rows := listing()
			Sort(rows)
			var b bytes.Buffer
			if err := Print(&b, FormatTable, all, net, rows); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if len(lines) != 2+len(rows) || !strings.HasPrefix(lines[0], "Migration network: ") {
				t.Fatalf("want header, titles and %d rows:\n%s", len(rows), b.String())
			}
			// In flight first (oldest first), then ended ones by creation time.
			var order []string
			for _, r := range rows {
				order = append(order, r.Name)
			}
			if got := strings.Join(order, ","); got != "moving,another-queued,queued,done-old,broke" {
				t.Errorf("order %s", got)
			}
			assertAligned(t, lines[1:])
			golden(t, name, b.String())
		})
	}
}

// assertAligned checks every column starts at the same rune offset on every line.
func assertAligned(t *testing.T, lines []string) {
	t.Helper()
	starts := func(l string) []int {
		var out []int
		r := []rune(l)
		for i := range r {
			if r[i] != ' ' && (i == 0 || (i >= 3 && string(r[i-3:i]) == "   ")) {
				out = append(out, i)
			}
		}
		return out
	}
	want := starts(lines[0])
	for _, l := range lines[1:] {
		got := starts(l)
		for i := 0; i < len(want) && i < len(got); i++ {
			if got[i] != want[i] {
				t.Errorf("column %d starts at %d, titles at %d:\n%s\n%s", i, got[i], want[i], lines[0], l)
				break
			}
		}
	}
}

// TestPrintPaths: failing migration paths are listed under the header, up to MaxPathFailures,
// in the table and in a watch; JSON carries them all; healthy paths add no line.
func TestPrintPaths(t *testing.T) {
	nad := nadOf(t, netValue)
	failing := Header(newSetting(netValue, applied(nad), nodes(3, 3), capacity(3, 253),
		cond("Ready", metav1.ConditionTrue, "AllNodesAttached", ""),
		cond("Healthy", metav1.ConditionFalse, "PathsFailing", "migration paths fail between attached nodes, most from or to node-1: 9000-byte frames from node-1 to node-2 do not arrive"),
		paths(failingPaths())))
	var b bytes.Buffer
	if err := Print(&b, FormatTable, false, failing, listing()[:1]); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	// header, Healthy, five failures, "... 1 more", titles, one row
	if len(lines) != 10 || !strings.HasPrefix(lines[1], "Paths: Healthy=False (PathsFailing): migration paths fail") ||
		!strings.HasPrefix(lines[2], "  node-1 → node-2 MTU: 9000-byte frames") || !strings.HasPrefix(lines[7], "  ... 1 more failing") {
		t.Errorf("table:\n%s", b.String())
	}
	golden(t, "print-paths", b.String())

	var js bytes.Buffer
	if err := Print(&js, FormatJSON, false, failing, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Network Network `json:"network"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if p := doc.Network.Paths; p == nil || p.Healthy != "False" || p.Reason != "PathsFailing" || p.Failing != 2 || len(p.Failures) != 6 ||
		p.Failures[0].From != "node-1" || p.Failures[0].To != "node-2" || p.Failures[0].Message == "" {
		t.Errorf("JSON paths: %+v", doc.Network.Paths)
	}

	var w bytes.Buffer
	fw := NewFollower(&w, FormatTable, false)
	if err := fw.Update(failing, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "\n  node-1 → node-3 MTU: ") {
		t.Errorf("watch does not list the failing paths:\n%s", w.String())
	}
	healed := failing
	healed.Paths = &Paths{Healthy: "True", Reason: "AllPathsVerified", Pairs: 3, Verified: 3, Summary: "3/3 verified"}
	w.Reset()
	if err := fw.Update(healed, nil); err != nil {
		t.Fatal(err)
	}
	if got := w.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, ", paths 3/3 verified") {
		t.Errorf("healed: want the header line alone, got:\n%s", got)
	}
}

func TestPrintEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Print(&b, FormatTable, false, Header(nil), nil); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 1 || strings.Contains(b.String(), "NAME") {
		t.Errorf("empty listing should be the header line only:\n%s", b.String())
	}
	b.Reset()
	if err := Print(&b, FormatJSON, false, Header(nil), nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Network    *Network `json:"network"`
		Migrations []Row    `json:"migrations"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Network == nil || doc.Network.Reason != ReasonNotFound || doc.Migrations == nil || len(doc.Migrations) != 0 {
		t.Errorf("empty JSON listing: %s", b.String())
	}
}

func TestPrintJSONGolden(t *testing.T) {
	rows := listing()
	Sort(rows)
	var b bytes.Buffer
	if err := Print(&b, FormatJSON, true, Header(newSetting("", cond("Ready", metav1.ConditionTrue, "PodNetwork", ""))), rows); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var got []Row
	if err := json.Unmarshal(doc["migrations"], &got); err != nil || len(got) != len(rows) {
		t.Fatalf("migrations: %v, %d rows", err, len(got))
	}
	if got[0].Name != "moving" || got[0].State != StateMigrating || *got[0].ElapsedSeconds != 192 || got[0].Started == nil {
		t.Errorf("first row %+v", got[0])
	}
	golden(t, "print-json", b.String())
}

// TestFollower drives a watch through a sequence of snapshots.
func TestFollower(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			f := NewFollower(&out, format, false)
			step := func(net Network, rows []Row) []string {
				t.Helper()
				out.Reset()
				if err := f.Update(net, rows); err != nil {
					t.Fatal(err)
				}
				if out.Len() == 0 {
					return nil
				}
				return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			}
			podNet := Header(newSetting("", cond("Ready", metav1.ConditionTrue, "PodNetwork", "")))
			vmi := newVMI()
			pending := Combine(newVMIM(), vmi, now)

			// Nothing yet: the header only, no column titles.
			lines := step(podNet, nil)
			if len(lines) != 1 {
				t.Fatalf("first update: %q", lines)
			}
			// A migration appears: titles (table) and its row.
			lines = step(podNet, []Row{pending})
			if want := map[string]int{FormatTable: 2, FormatJSON: 1}[format]; len(lines) != want {
				t.Fatalf("new migration: %q", lines)
			}
			// Time passes, nothing else changes: nothing printed.
			if lines = step(podNet, []Row{Combine(newVMIM(), vmi, now.Add(time.Minute))}); lines != nil {
				t.Errorf("elapsed-only change printed %q", lines)
			}
			// It starts running: one row.
			running := Combine(newVMIM(phase(kubevirtv1.MigrationRunning)), newVMI(vmiState(mode(kubevirtv1.MigrationPostCopy))), now)
			lines = step(podNet, []Row{running})
			if len(lines) != 1 || !strings.Contains(lines[0], "post-copy") {
				t.Errorf("state change: %q", lines)
			}
			// The network changes: one header line.
			lines = step(Header(nil), []Row{running})
			if len(lines) != 1 || !strings.Contains(lines[0], "NotFound") {
				t.Errorf("network change: %q", lines)
			}
			// The migration is deleted: its last row, state deleted.
			lines = step(Header(nil), nil)
			if len(lines) != 1 || !strings.Contains(lines[0], StateDeleted) {
				t.Errorf("deletion: %q", lines)
			}
			if lines = step(Header(nil), nil); lines != nil {
				t.Errorf("nothing changed, printed %q", lines)
			}
			if format == FormatJSON {
				checkJSONLines(t)
			}
		})
	}
}

// checkJSONLines replays a watch and checks each line is one event object of a known type.
func checkJSONLines(t *testing.T) {
	t.Helper()
	var out bytes.Buffer
	f := NewFollower(&out, FormatJSON, true)
	rows := listing()
	if err := f.Update(Header(nil), rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1+len(rows) {
		t.Fatalf("%d lines for a header and %d rows", len(lines), len(rows))
	}
	for i, l := range lines {
		var e struct {
			Type      string   `json:"type"`
			Network   *Network `json:"network"`
			Migration *Row     `json:"migration"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		switch {
		case i == 0 && (e.Type != "network" || e.Network == nil || e.Migration != nil):
			t.Errorf("line 0 is not a network event: %s", l)
		case i > 0 && (e.Type != "migration" || e.Migration == nil || e.Network != nil):
			t.Errorf("line %d is not a migration event: %s", i, l)
		}
		if !strings.HasPrefix(l, `{"type":`) {
			t.Errorf("line %d does not start with its type: %s", i, l)
		}
	}
}

// TestFollowerAlignment checks rows printed later line up with the first table, and widen it when
// a cell is longer.
func TestFollowerAlignment(t *testing.T) {
	var out bytes.Buffer
	f := NewFollower(&out, FormatTable, true)
	rows := listing()
	Sort(rows)
	if err := f.Update(Header(nil), rows); err != nil {
		t.Fatal(err)
	}
	changed := rows[1]
	changed.State, changed.Reason = StateFailed, "x"
	if err := f.Update(Header(nil), append([]Row{changed}, rows[2:]...)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2+len(rows)+2 { // header, titles, rows, the changed row, the deleted row
		t.Fatalf("lines:\n%s", out.String())
	}
	assertAligned(t, lines[1:])
	if !strings.Contains(lines[len(lines)-1], rows[0].Name) || !strings.Contains(lines[len(lines)-1], StateDeleted) {
		t.Errorf("last line should be %s deleted: %s", rows[0].Name, lines[len(lines)-1])
	}
}

// TestFollowerPrintsWhatItShows checks a change only JSON carries (the target's address) prints
// a JSON line but no table row.
func TestFollowerPrintsWhatItShows(t *testing.T) {
	want := map[string]int{FormatTable: 0, FormatJSON: 1}
	for _, format := range Formats {
		var out bytes.Buffer
		f := NewFollower(&out, format, false)
		r := Combine(newVMIM(phase(kubevirtv1.MigrationRunning)), newVMI(vmiState()), now)
		if err := f.Update(Header(nil), []Row{r}); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		r.TargetAddress = "192.168.100.99"
		if err := f.Update(Header(nil), []Row{r}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(out.String(), "\n"); got != want[format] {
			t.Errorf("%s: %d lines for an address change, want %d:\n%s", format, got, want[format], out.String())
		}
	}
}
