package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/migranet/migranet/cmd/migranet/status"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// preflightReport is what migranet preflight prints.
type preflightReport struct {
	Namespace string `json:"namespace"`
	VMI       string `json:"vmi"`
	// User is the username the rules were judged for ("" when it could not be learned).
	User string `json:"user"`
	// HarvesterNote says why Harvester's migrate action offers no node, or why its offers are not
	// shown; "" otherwise (and off Harvester).
	HarvesterNote string `json:"harvesterNote,omitempty"`
	*migrationcheck.PreflightResult
}

func (r preflightReport) print(w io.Writer, format string) error {
	if format == status.FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	verdict := "ADMITTED"
	switch {
	case !r.Admitted:
		verdict = "REFUSED"
	case len(r.Warnings) > 0:
		verdict = fmt.Sprintf("ADMITTED with %d %s", len(r.Warnings), settings.Plural(len(r.Warnings), "warning", "warnings"))
	}
	fmt.Fprintf(w, "A migration of VirtualMachineInstance %s/%s would be %s.\n\n", r.Namespace, r.VMI, verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tVERDICT\tMESSAGE")
	for _, rv := range r.Rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", rv.Rule, rv.Verdict, rv.Message)
	}
	if r.Nodes != nil {
		fmt.Fprintln(tw, "\t\t")
		paths := slices.ContainsFunc(r.Nodes, func(n migrationcheck.NodeVerdict) bool { return n.Path != "" })
		harvester := slices.ContainsFunc(r.Nodes, func(n migrationcheck.NodeVerdict) bool { return n.HarvesterOffers != nil })
		inbound := slices.ContainsFunc(r.Nodes, func(n migrationcheck.NodeVerdict) bool { return n.Inbound != "" })
		header := "NODE\tTARGET\t"
		if inbound {
			header += "INBOUND\t"
		}
		if harvester {
			header += "HARVESTER OFFERS\t"
		}
		if paths {
			header += "WHY NOT / PATH FROM THE SOURCE"
		} else {
			header += "WHY NOT"
		}
		fmt.Fprintln(tw, header)
		for _, n := range r.Nodes {
			target, why := "no", n.Reason
			if n.Fits {
				target = "yes"
				if paths {
					why = "path " + n.Path
				}
			}
			if inbound {
				target += "\t" + n.Inbound
			}
			if harvester {
				target += "\t" + yesNo(n.HarvesterOffers != nil && *n.HarvesterOffers)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Node, target, why)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := harvesterConflicts(r.Nodes)
	if r.HarvesterNote != "" {
		lines = append(lines, r.HarvesterNote)
	}
	if len(lines) > 0 {
		_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
		return err
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
