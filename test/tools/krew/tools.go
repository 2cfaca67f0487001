//go:build tools

// Package krew pins krew v0.4.3, whose own code checks the release's plugin manifest: its
// validate-krew-manifest command (internal/index/validation.ValidatePlugin, the platform checks)
// and krew itself (`krew install --manifest FILE --archive FILE`: the sha256, the bin, the files),
// built by test/tools/build.sh krew. A module of its own: krew's go.mod pins k8s.io/* v0.21.
package krew

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
