package env

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/migranet/migranet/test/sim"
)

// MigrationProxiesMode says which way the virt-handler stand-in moves a migration's bytes on real
// node networks.
type MigrationProxiesMode string

const (
	// ProxiesRequired: through the patched migration proxy pair (vendor-patches' labproxy, built
	// by `vendor-patches/run.sh lab-proxy`); Start fails when it cannot be built (the suites).
	ProxiesRequired MigrationProxiesMode = ""
	// ProxiesIfBuilt: through the pair when it builds, else plain TCP, saying why (make dev).
	ProxiesIfBuilt MigrationProxiesMode = "if-built"
	// ProxiesPlain: plain TCP between the migration0 addresses, the series not built.
	ProxiesPlain MigrationProxiesMode = "plain"
)

// startProxies builds the lab's migration proxy and issues virt-handler's certificates from the
// KubeVirt CA, as mode asks; nil and why for plain streams. Only with real node networks and
// KubeVirt's own components (the stand-in's streams need both).
func (e *Env) startProxies(ctx context.Context, mode MigrationProxiesMode, progress io.Writer) (*sim.MigrationProxies, string, error) {
	if e.NodeNetworks == nil {
		return nil, "no bytes move: the node networks are simulated (the stand-in judges each path by a model)", nil
	}
	if mode == ProxiesPlain {
		return nil, "plain TCP, as asked: the patched proxy pair is not built", nil
	}
	fmt.Fprintln(progress, "env: building the lab's migration proxy (vendor-patches/run.sh lab-proxy; cold: the patched KubeVirt v1.9.0 packages, minutes)")
	bin, err := sim.BuildLabProxy(ctx, io.Discard)
	if err != nil {
		if mode == ProxiesIfBuilt {
			fmt.Fprintf(progress, "env: WARNING: the patched migration proxy does not build (%v); migrations stream over plain TCP\n", err)
			return nil, "plain TCP: the patched proxy pair did not build (" + err.Error() + ")", nil
		}
		return nil, "", fmt.Errorf("the lab's migration proxy: %w", err)
	}
	certs, err := sim.WriteHandlerCerts(e.KubeVirtCA(), filepath.Join(e.Dir, "pki", "virt-handler"))
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintf(progress, "env: migrations stream through the patched migration proxy pair (%s)\n", bin)
	return &sim.MigrationProxies{Binary: bin, Certs: certs, Dir: e.Dir}, "", nil
}

// MigrationPath says which way migrations move their bytes in this environment, for make dev's
// ready line: through the patched proxy pair, over plain TCP and why, or not at all.
func (e *Env) MigrationPath() string {
	if e.MigrationProxies != nil {
		return "through the patched migration proxy pair (vendor-patches' labproxy, KubeVirt v1.9.0 series, mTLS unless migrations.disableTLS) between the nodes' migration0 addresses; proxy metrics on each virt-handler pod's :8443"
	}
	return e.plainWhy
}
