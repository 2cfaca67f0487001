package main

import (
	"fmt"
	"regexp"
)

// checkVersion accepts a release version vMAJOR.MINOR.PATCH with an optional pre-release
// (-rc.1), as semver spells them; build metadata (+...) is refused because an image tag cannot
// carry a '+'.
func checkVersion(v string) error {
	semver := regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$`)
	if !semver.MatchString(v) {
		return fmt.Errorf("VERSION=%q is not a release version: want vMAJOR.MINOR.PATCH or vMAJOR.MINOR.PATCH-PRERELEASE (semver, e.g. v0.1.0 or v0.2.0-rc.1), as in `make release VERSION=v0.1.0`", v)
	}
	return nil
}
