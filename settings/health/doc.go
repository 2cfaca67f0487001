// Package health is what migranet concludes about the migration network in force, from what
// was observed of it: the readiness snapshot the network controller publishes for admission
// (readiness.go: Snapshot, Store, the Ready reasons), the path health summed up from the probe
// agents' PathReports (paths*.go: PathHealth, PathStore, Pair, BrokenFrom, Summary, staleness) and
// the rule that aborts a streaming migration whose path breaks (abort.go: DecideAbort). It reaches
// down to the network and the migration policy (package settings) and nothing else; it reads and
// writes nothing (netcontroller observes and publishes, webhook and cmd read).
package health
