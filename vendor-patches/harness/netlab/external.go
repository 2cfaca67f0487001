package netlab

import (
	"encoding/json"
	"fmt"
	"os"
)

// ExternalVar names the environment variable through which a caller hands the harness a lab it
// built itself, as JSON of Lab's fields: migranet's proving ground (test/nodenet) sets it to two
// virt-handler sandboxes whose migration0 the real bridge and whereabouts plugins made, joined
// through the nodes' bridges, uplinks and switch, plus a management link between them.
const ExternalVar = "MIGRANET_HARNESS_LAB"

// Open returns the lab ExternalVar describes when it is set (Close then leaves its namespaces
// to their owner), else a new one (New).
func Open() (*Lab, error) {
	raw := os.Getenv(ExternalVar)
	if raw == "" {
		return New()
	}
	l := &Lab{}
	if err := json.Unmarshal([]byte(raw), l); err != nil {
		return nil, fmt.Errorf("%s: %w", ExternalVar, err)
	}
	if l.Source == "" || l.Target == "" || l.SourceMig == "" || l.TargetMig == "" || l.SourceMgmt == "" || l.TargetMgmt == "" ||
		l.SourceMigDev == "" || l.TargetMigDev == "" || l.SourceMgmtDev == "" || l.TargetMgmtDev == "" {
		return nil, fmt.Errorf("%s: every namespace, address and device must be named: %s", ExternalVar, raw)
	}
	l.external = true
	l.Notes = append(l.Notes, "external lab: "+l.Source+" → "+l.Target+" over "+l.SourceMig+" → "+l.TargetMig)
	return l, nil
}
