package main

import "testing"

// TestCheckVersion: the fault it catches is a version check that lets through what is not a
// semver release version (make's git-describe default, a missing v, build metadata a tag cannot
// hold, a leading zero) or refuses a pre-release.
func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.1.0": true, "v1.22.333": true, "v0.2.0-rc.1": true, "v1.0.0-alpha.beta-2": true,
		"": false, "0.1.0": false, "v0.1": false, "v0.1.0.1": false, "v01.1.0": false, "v0.1.0-": false,
		"v0.1.0-rc.01": false, "v0.1.0+build": false, "c8a3afe-dirty": false, "latest": false, "v0.1.0\n": false,
	} {
		if err := checkVersion(v); (err == nil) != ok {
			t.Errorf("checkVersion(%q) = %v, want ok=%v", v, err, ok)
		}
	}
}
