package status

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Output formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// Formats lists the output formats, for flag help and errors.
var Formats = []string{FormatTable, FormatJSON}

// none is what the table shows for a value not known (kubectl's spelling).
const none = "<none>"

// columnGap separates table columns, as kubectl's printers do.
const columnGap = "   "

// Sort orders rows in-flight first, then by creation time, then namespace and name.
func Sort(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.InFlight != b.InFlight {
			return a.InFlight
		}
		if !a.Created.Equal(&b.Created) {
			return a.Created.Before(&b.Created)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// Columns are the table's column titles; allNamespaces adds NAMESPACE first.
func Columns(allNamespaces bool) []string {
	cols := []string{"NAME", "VMI", "NODES", "PHASE", "MODE", "NETWORK", "ELAPSED", "STATE"}
	if allNamespaces {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	return cols
}

// Cells are the row's table cells, in the order of Columns.
func (r Row) Cells(allNamespaces bool) []string {
	cells := []string{r.Name, r.VMI, r.nodes(), orNone(r.Phase), r.modeText(), r.networkText(), r.ElapsedText(), r.StateText()}
	if allNamespaces {
		cells = append([]string{r.Namespace}, cells...)
	}
	return cells
}

func (r Row) nodes() string {
	if r.SourceNode == "" && r.TargetNode == "" {
		return none
	}
	return orUnknownNode(r.SourceNode) + " → " + orUnknownNode(r.TargetNode)
}

func (r Row) modeText() string {
	switch kubevirtv1.MigrationMode(r.Mode) {
	case kubevirtv1.MigrationPreCopy:
		return "pre-copy"
	case kubevirtv1.MigrationPostCopy:
		return "post-copy"
	case kubevirtv1.MigrationPaused:
		return "paused"
	}
	return orNone(strings.ToLower(r.Mode))
}

func (r Row) networkText() string { return orNone(strings.ToLower(r.Network)) }

// ElapsedText is the ELAPSED column in kubectl's duration style (45s, 3m12s, 2d3h).
func (r Row) ElapsedText() string {
	if r.ElapsedSeconds == nil {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Duration(*r.ElapsedSeconds) * time.Second)
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

func orUnknownNode(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// Print writes one listing: in table format the header line, then the column titles and one line
// per row (nothing after the header when there are no rows); in JSON one indented document
// {"network":…, "migrations":[…]}.
func Print(w io.Writer, format string, allNamespaces bool, net Network, rows []Row) error {
	if format == FormatJSON {
		if rows == nil {
			rows = []Row{}
		}
		return writeJSON(w, struct {
			Network    Network `json:"network"`
			Migrations []Row   `json:"migrations"`
		}{net, rows})
	}
	var t table
	var b strings.Builder
	b.WriteString(net.headerLines())
	for _, l := range net.PathLines(MaxPathFailures) {
		b.WriteString(l + "\n")
	}
	if len(rows) > 0 {
		lines := [][]string{Columns(allNamespaces)}
		for _, r := range rows {
			lines = append(lines, r.Cells(allNamespaces))
		}
		t.widen(lines...)
		for _, l := range lines {
			b.WriteString(t.line(l))
		}
		for _, r := range rows {
			for _, warning := range r.AdmissionWarnings {
				b.WriteString("Warning: " + r.Name + " was admitted with: " + warning + "\n")
			}
			for _, st := range r.Steering {
				b.WriteString("Steered: " + st + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSON writes v as one indented JSON document, as -o json prints.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// headerLines are the network's header line and, when a budget applies, its budget line.
func (n Network) headerLines() string {
	h := n.String() + "\n"
	if l := n.Budget.String(); l != "" {
		h += l + "\n"
	}
	return h
}

// table aligns columns; its widths only grow, so the rows a watch prints later line up with the
// table printed first.
type table struct{ widths []int }

func (t *table) widen(lines ...[]string) {
	for _, cells := range lines {
		for i, c := range cells {
			if i == len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			if n := utf8.RuneCountInString(c); n > t.widths[i] {
				t.widths[i] = n
			}
		}
	}
}

// line pads every cell but the last to its column's width.
func (t *table) line(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)))
		b.WriteString(columnGap)
	}
	b.WriteString("\n")
	return b.String()
}

// Follower prints a changing set of migrations the way `kubectl get -w` does: everything once,
// then one line per change.
type Follower struct {
	w             io.Writer
	format        string
	allNamespaces bool
	started       bool
	titled        bool // table: the column titles have been printed
	table         table
	network       string
	rows          map[string]followed
}

type followed struct {
	row Row
	sig string
}

// NewFollower returns a Follower writing to w in format (FormatTable or FormatJSON). Its table
// starts with the columns of few values (PHASE, MODE, NETWORK, ELAPSED) as wide as their longest
// usual value, so rows printed later seldom shift.
func NewFollower(w io.Writer, format string, allNamespaces bool) *Follower {
	f := &Follower{w: w, format: format, allNamespaces: allNamespaces, rows: map[string]followed{}}
	seed := Row{Phase: string(kubevirtv1.MigrationPreparingTarget), Mode: string(kubevirtv1.MigrationPostCopy),
		Network: string(kubevirtv1.Migration), ElapsedSeconds: ptrTo(int64(9*60 + 59))}
	cells := seed.Cells(allNamespaces)
	for i, title := range Columns(allNamespaces) {
		switch title {
		case "PHASE", "MODE", "NETWORK", "ELAPSED":
		default:
			cells[i] = ""
		}
	}
	f.table.widen(cells)
	return f
}

func ptrTo[T any](v T) *T { return &v }

// Update prints what changed since the previous call. The first call prints the header and every
// row (in table format the column titles come with the first row). Later calls print the header
// line again when it changed, one line per row whose content other than ELAPSED changed, and for
// a migration no longer in rows its last row with state "deleted". In JSON every line is one
// event object (see the package documentation).
func (f *Follower) Update(net Network, rows []Row) error {
	var b strings.Builder
	if sig := f.networkSignature(net); !f.started || sig != f.network {
		f.network = sig
		b.WriteString(f.networkLine(net))
	}
	seen := map[string]bool{}
	var changed []Row
	for _, r := range rows {
		seen[r.Key()] = true
		sig := f.rowSignature(r)
		if prev, ok := f.rows[r.Key()]; ok && prev.sig == sig {
			continue
		}
		f.rows[r.Key()] = followed{row: r, sig: sig}
		changed = append(changed, r)
	}
	var gone []string
	for k := range f.rows {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		r := f.rows[k].row
		delete(f.rows, k)
		r.State, r.Reason, r.InFlight = StateDeleted, "", false
		changed = append(changed, r)
	}
	f.started = true
	if f.format == FormatTable && len(changed) > 0 {
		lines := make([][]string, 0, len(changed)+1)
		if !f.titled {
			lines = append(lines, Columns(f.allNamespaces))
			f.titled = true
		}
		for _, r := range changed {
			lines = append(lines, r.Cells(f.allNamespaces))
		}
		f.table.widen(lines...)
		for _, l := range lines {
			b.WriteString(f.table.line(l))
		}
	}
	if f.format == FormatJSON {
		for _, r := range changed {
			b.WriteString(event{Type: "migration", Migration: &r}.line())
		}
	}
	_, err := io.WriteString(f.w, b.String())
	return err
}

func (f *Follower) networkLine(net Network) string {
	if f.format == FormatJSON {
		return event{Type: "network", Network: &net}.line()
	}
	return strings.Join(append([]string{net.String()}, net.PathLines(MaxPathFailures)...), "\n") + "\n"
}

// event is one line of `-o json -w`.
type event struct {
	Type      string   `json:"type"`
	Network   *Network `json:"network,omitempty"`
	Migration *Row     `json:"migration,omitempty"`
}

func (e event) line() string {
	raw, err := json.Marshal(e)
	if err != nil {
		// Rows and networks hold only strings, numbers, booleans and times: this does not happen.
		return fmt.Sprintf("{\"type\":\"error\",\"error\":%q}\n", err.Error())
	}
	return string(raw) + "\n"
}

// rowSignature is what decides whether a row changed: what the format prints of it, ELAPSED
// aside (it changes every second).
func (f *Follower) rowSignature(r Row) string {
	if f.format == FormatJSON {
		r.ElapsedSeconds = nil
		return jsonSignature(r)
	}
	r.ElapsedSeconds = ptrTo(int64(0))
	return strings.Join(r.Cells(f.allNamespaces), "\x00")
}

func (f *Follower) networkSignature(n Network) string {
	if f.format == FormatJSON {
		return jsonSignature(n)
	}
	return strings.Join(append([]string{n.String()}, n.PathLines(MaxPathFailures)...), "\n")
}

func jsonSignature(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}
