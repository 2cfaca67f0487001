package results

import (
	"os"
	"strings"
)

// OptOutVar names the one environment variable that lets a named suite skip when its
// prerequisite is missing. Without it, a missing prerequisite fails the suite.
const OptOutVar = "MIGRANET_TEST_SKIP"

// DirVar names the environment variable holding the directory that suites write their
// results to; unset, nothing is written.
const DirVar = "MIGRANET_TEST_RESULTS"

// Prerequisite returns what the named suite needs when it may be opted out, and false for a
// name MIGRANET_TEST_SKIP does not accept.
func Prerequisite(suite string) (string, bool) {
	switch suite {
	case "qemu":
		return "network namespaces (root or CAP_SYS_ADMIN) and qemu-system-x86_64 (apt-get install qemu-system-x86)", true
	case "netns":
		return "network and mount namespaces (root, or CAP_SYS_ADMIN and CAP_NET_ADMIN), ip, unshare, mount and ping (apt-get install iproute2 util-linux mount iputils-ping)", true
	}
	return "", false
}

// OptedOut reports whether the comma-separated list value names suite.
func OptedOut(value, suite string) bool {
	for _, s := range strings.Split(value, ",") {
		if strings.TrimSpace(s) == suite {
			return true
		}
	}
	return false
}

// OptedOutNow is OptedOut for the current environment.
func OptedOutNow(suite string) bool { return OptedOut(os.Getenv(OptOutVar), suite) }
