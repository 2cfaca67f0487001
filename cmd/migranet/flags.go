package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/migranet/migranet/cmd/migranet/status"
)

// newFlagSet returns a FlagSet that prints nothing itself: its command prints its usage on
// stdout for -h or --help (flag.ErrHelp) and reports any other parse error once, on stderr.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// printDefaults writes the flags of fs, as the flag package lists them, to w.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.SetOutput(w)
	defer fs.SetOutput(io.Discard)
	fs.PrintDefaults()
}

// flagDoc is one entry of a command's "Flags:" section: the flag as typed and what it does;
// each further line of text continues under the first.
type flagDoc struct{ flag, text string }

// flagColumn is the column where flag descriptions start in every command's usage.
const flagColumn = 33

// formatFlags lays docs out as the lines of a "Flags:" section, kubectl's way: short flags
// first, long-only flags indented to line up with the long names, descriptions in one column.
func formatFlags(docs ...flagDoc) string {
	var b strings.Builder
	for _, d := range docs {
		head := "  " + d.flag
		if strings.HasPrefix(d.flag, "--") {
			head = "      " + d.flag
		}
		lines := strings.Split(d.text, "\n")
		fmt.Fprintf(&b, "%-*s%s\n", flagColumn, head+"  ", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "%*s%s\n", flagColumn, "", l)
		}
	}
	return b.String()
}

// docOutput documents -o/--output as registerOutput registers it.
var docOutput = flagDoc{"-o, --output FORMAT", "table (default) or json"}

// registerOutput registers -o/--output, kubectl's spelling, into p (default table).
func registerOutput(fs *flag.FlagSet, p *string) {
	for _, n := range []string{"o", "output"} {
		fs.StringVar(p, n, status.FormatTable, "")
	}
}

// checkOutput refuses an output format other than table and json.
func checkOutput(output string) error {
	if output != status.FormatTable && output != status.FormatJSON {
		return fmt.Errorf("-o %q: the output format must be one of %s", output, strings.Join(status.Formats, ", "))
	}
	return nil
}

// kubectlShortFlags spells kubectl's joined short flags the way the flag package reads them:
// "-ojson" → "-o json", "-nprod" → "-n prod", "-Aw" → "-A -w".
func kubectlShortFlags(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) <= 2 || a[0] != '-' || a[1] == '-' || strings.Contains(a, "=") {
			out = append(out, a)
			continue
		}
		switch {
		case a[1] == 'o' || a[1] == 'n':
			out = append(out, a[:2], a[2:])
		case strings.Trim(a[1:], "Aw") == "":
			for _, ch := range a[1:] {
				out = append(out, "-"+string(ch))
			}
		default:
			out = append(out, a)
		}
	}
	return out
}
