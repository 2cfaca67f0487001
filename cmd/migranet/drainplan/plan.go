package drainplan

import (
	"slices"
	"strings"
	"time"

	"github.com/migranet/migranet/settings"
)

// Exit statuses of `migranet preflight --drain`.
const (
	// ExitMoves: the drain would complete, every running VMI live-migrated.
	ExitMoves = 0
	// ExitBlocked: the drain would not complete (a VMI blocks it or waits for an external
	// controller).
	ExitBlocked = 1
	// ExitError: bad usage, or the cluster could not be read.
	ExitError = 2
	// ExitStops: the drain would complete, but shuts VMs down on the way.
	ExitStops = 3
)

// Categories: why a VMI does not move, in short, as the table shows it.
const (
	CatEvictionNone     = "evictionStrategy None"
	CatNoStrategy       = "no evictionStrategy"
	CatExternal         = "evictionStrategy External"
	CatNotMigratable    = "not LiveMigratable"
	CatNodeSelector     = "required node selector"
	CatNoTarget         = "no feasible target"
	CatPathsFailing     = "only targets behind failing paths"
	CatAdmission        = "admission refuses"
	CatCannotConverge   = "cannot converge"
	CatNotRunning       = "not running"
	CatMigrationRunning = "migrating already"
)

// VMIPlan is one VMI's part of the drain.
type VMIPlan struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Verdict: Moves, Stops, Blocks, Waits or Skipped; Category and Why say why not Moves.
	Verdict          string `json:"verdict"`
	Category         string `json:"category,omitempty"`
	Why              string `json:"why,omitempty"`
	EvictionStrategy string `json:"evictionStrategy"`
	// Target is the node the scheduler would pick, Ties the nodes that score the same; Path is
	// the migration path's verdict from the drained node to Target.
	Target string   `json:"target,omitempty"`
	Ties   []string `json:"ties,omitempty"`
	Path   string   `json:"path,omitempty"`
	// Memory is the guest memory in bytes; Dirty its dirty rate in bytes a second (0 when
	// KubeVirt reports none, DirtyFrom says so).
	Memory     int64     `json:"memoryBytes"`
	Dirty      int64     `json:"dirtyRateBytesPerSecond"`
	DirtyFrom  string    `json:"dirtyRateFrom"`
	Throughput *Measured `json:"throughput,omitempty"`
	Estimate   *Estimate `json:"estimate,omitempty"`
	// Expected is from the migration's creation to its end (setup, stream, finish) in seconds;
	// Start and End its place in the drain's schedule (in the order of this plan).
	Expected float64 `json:"expectedSeconds,omitempty"`
	Start    float64 `json:"startSeconds,omitempty"`
	End      float64 `json:"endSeconds,omitempty"`
	// Warnings are admission's warnings on its migration, word for word.
	Warnings []string `json:"warnings,omitempty"`
	// Notes: StorageLiveMigratable, what Harvester's migrate action says, the ties.
	Notes []string `json:"notes,omitempty"`

	took time.Duration
}

// Plan is the drain of one node.
type Plan struct {
	Node string `json:"node"`
	// Completes says whether the drain would complete; Exit is the exit status.
	Completes bool      `json:"completes"`
	Exit      int       `json:"exit"`
	VMIs      []VMIPlan `json:"vmis"`
	Options   Options   `json:"kubevirt"`
	// Parallel is how many of the node's migrations run at once; Binding the limit that says so;
	// Elsewhere the migrations running from other nodes now; Inbound the per-node inbound limit
	// in force ("" none).
	Parallel  int    `json:"parallel"`
	Binding   string `json:"binding"`
	Elsewhere int    `json:"runningElsewhere"`
	Inbound   string `json:"inbound"`
	// Total is the drain's expected time in seconds (the mean over the orders KubeVirt may take
	// the VMIs in, plus half of kubectl drain's eviction retry), Min and Max its spread, Orders
	// how many orders were simulated.
	Total  float64 `json:"totalSeconds"`
	Min    float64 `json:"minSeconds"`
	Max    float64 `json:"maxSeconds"`
	Orders int     `json:"orders"`
	// Overheads says what the setup and finish of each migration were read from; Metrics where
	// the dirty rates (and live throughputs) came from, or why none.
	Overheads string `json:"overheads"`
	Metrics   string `json:"metrics"`
	// LeftBehind are the VMIs the drain stops, blocks on or waits for.
	LeftBehind []string `json:"leftBehind,omitempty"`
}

// Add appends a VMI's part. A moving VMI carries its expected time (setup + stream + finish).
func (p *Plan) Add(v VMIPlan, setup, finish time.Duration) {
	if v.Verdict == Moves && v.Estimate != nil {
		v.took = setup + v.Estimate.Stream + finish
		v.Expected = v.took.Seconds()
	}
	p.VMIs = append(p.VMIs, v)
}

// Finish schedules the moving VMIs under l, in the plan's order for Start and End and over every
// order for the total, and sets the verdict of the whole drain.
func (p *Plan) Finish(l Limits) {
	p.Parallel, p.Binding, p.Elsewhere = l.Slots(), l.Binding(), l.Elsewhere
	if p.Inbound == "" {
		p.Inbound = "none (KubeVirt has no inbound limit)"
	}
	var jobs []Job
	var idx []int
	stops, blocked := 0, 0
	for i, v := range p.VMIs {
		switch v.Verdict {
		case Moves:
			jobs = append(jobs, Job{Name: v.Namespace + "/" + v.Name, Target: v.Target, Took: v.took})
			idx = append(idx, i)
		case Stops:
			stops++
			p.LeftBehind = append(p.LeftBehind, v.Namespace+"/"+v.Name+" ("+v.Verdict+": "+v.Category+")")
		case Blocks, Waits:
			blocked++
			p.LeftBehind = append(p.LeftBehind, v.Namespace+"/"+v.Name+" ("+v.Verdict+": "+v.Category+")")
		}
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	runs, _ := Simulate(jobs, order, l)
	for k, i := range idx {
		p.VMIs[i].Start, p.VMIs[i].End = runs[k].Start.Seconds(), runs[k].End.Seconds()
	}
	s := SimulateOrders(jobs, l)
	tail := EvictionRetry / 2
	if len(jobs) == 0 {
		tail = 0
	}
	p.Total, p.Min, p.Max, p.Orders = (s.Mean + tail).Seconds(), (s.Min + tail).Seconds(), (s.Max + tail).Seconds(), s.Orders
	p.Completes = blocked == 0 && (p.Parallel > 0 || len(jobs) == 0)
	switch {
	case !p.Completes:
		p.Exit = ExitBlocked
	case stops > 0:
		p.Exit = ExitStops
	default:
		p.Exit = ExitMoves
	}
}

// Refusal is what admission answers the VMI's evacuation migration (migrationcheck.Preflight's
// verdicts): the rules that refuse it and the refusal's text.
type Refusal struct {
	Rules []settings.Rule
	Text  string
	// Pinned is true when the VMI's own nodeSelector is what leaves no target.
	Pinned bool
}

// Category says in short why admission refuses.
func (r Refusal) Category() string {
	switch {
	case r.Pinned:
		return CatNodeSelector
	case slices.Contains(r.Rules, settings.RulePathHealthy) && !slices.Contains(r.Rules, settings.RuleFeasibleTarget):
		return CatPathsFailing
	case slices.Contains(r.Rules, settings.RuleFeasibleTarget):
		return CatNoTarget
	case slices.Contains(r.Rules, settings.RuleVMIState):
		return CatMigrationRunning
	}
	names := make([]string, len(r.Rules))
	for i, n := range r.Rules {
		names[i] = string(n)
	}
	return CatAdmission + " (" + strings.Join(names, ", ") + ")"
}

// PinnedBySelector reports whether a feasibleTarget refusal blames the VMI's own nodeSelector
// (the words migrationcheck's feasibleTarget uses for it).
func PinnedBySelector(text string) bool {
	return strings.Contains(text, "(the VMI's nodeSelector)") || strings.Contains(text, "the VMI's nodeSelector pins it")
}
