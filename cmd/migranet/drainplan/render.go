package drainplan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes the plan as a table (format "table") or as one JSON object ("json").
func (p *Plan) Print(w io.Writer, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	counts := map[string]int{}
	for _, v := range p.VMIs {
		counts[v.Verdict]++
	}
	var parts []string
	for _, k := range []string{Moves, Stops, Blocks, Waits, Skipped} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	verdict := "WOULD COMPLETE"
	switch p.Exit {
	case ExitBlocked:
		verdict = "would NOT complete"
	case ExitStops:
		verdict = "WOULD COMPLETE, shutting VMs down"
	}
	fmt.Fprintf(w, "Drain of node %s: %d %s (%s). The drain %s.\n\n", p.Node, len(p.VMIs), plural(len(p.VMIs), "VMI", "VMIs"), strings.Join(parts, ", "), verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VMI\tVERDICT\tTARGET\tPATH\tMEMORY\tDIRTY RATE\tTHROUGHPUT\tEXPECTED\tSTART\tWHY NOT / OUTCOME")
	for _, v := range p.VMIs {
		target, path, dirty, thr, exp, start, why := "-", "-", "-", "-", "-", "-", v.Category
		if v.Verdict == Moves {
			target, path, why = v.Target, v.Path, v.Estimate.Words()
			if len(v.Ties) > 0 {
				target += " (or " + strings.Join(v.Ties, ", ") + ")"
			}
			if path == "" {
				path = "not judged"
			}
			exp, start = Clock(v.Expected), "+"+Clock(v.Start)
		}
		if v.Memory > 0 {
			dirty = "not reported"
			if v.Dirty > 0 || v.DirtyFrom != "" && !strings.HasPrefix(v.DirtyFrom, "not reported") {
				dirty = Rate(v.Dirty)
			}
		}
		if v.Throughput != nil {
			thr = Rate(v.Throughput.BytesPerSecond)
		}
		mem := "-"
		if v.Memory > 0 {
			mem = fmt.Sprintf("%.1f GiB", float64(v.Memory)/(1<<30))
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Namespace, v.Name, v.Verdict, target, path, mem, dirty, thr, exp, start, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	moving := counts[Moves]
	if moving > 0 {
		fmt.Fprintf(w, "Order: %d at a time (%s binds: parallelOutboundMigrationsPerNode %d, parallelMigrationsPerCluster %d, %d running from other nodes; inbound limit per node: %s).\n",
			p.Parallel, p.Binding, p.Options.ParallelOutboundPerNode, p.Options.ParallelPerCluster, p.Elsewhere, p.Inbound)
		fmt.Fprintf(w, "Expected total: %s (%s to %s over the %d orders KubeVirt may take the %d in), kubectl drain's eviction retry (%s) included.\n",
			Clock(p.Total), Clock(p.Min), Clock(p.Max), p.Orders, moving, EvictionRetry)
		if p.Parallel == 0 {
			fmt.Fprintf(w, "No migration can start: parallelMigrationsPerCluster %d is taken by migrations from other nodes.\n", p.Options.ParallelPerCluster)
		}
	}
	if len(p.LeftBehind) > 0 {
		fmt.Fprintf(w, "Left behind: %s.\n", strings.Join(p.LeftBehind, "; "))
	}
	fmt.Fprintln(w)
	for _, v := range p.VMIs {
		var lines []string
		if v.Why != "" {
			lines = append(lines, v.Why)
		}
		if v.Verdict == Moves || v.Category == CatCannotConverge {
			if v.Throughput != nil {
				lines = append(lines, "throughput: "+v.Throughput.From)
			}
			lines = append(lines, "dirty rate: "+v.DirtyFrom)
			if v.Estimate != nil && v.Estimate.Advice != "" {
				lines = append(lines, v.Estimate.Advice)
			}
		}
		lines = append(lines, v.Warnings...)
		lines = append(lines, v.Notes...)
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s/%s:\n  %s\n", v.Namespace, v.Name, strings.Join(lines, "\n  "))
	}
	if moving > 0 {
		_, err := fmt.Fprintf(w, "\nEach migration: %s.\nDirty rates: %s.\n", p.Overheads, p.Metrics)
		return err
	}
	return nil
}

// Clock words seconds as kubectl words an age, to a tenth under a minute: 42.5s, 3m12s.
func Clock(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	if d < time.Hour {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
