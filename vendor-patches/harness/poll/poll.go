package poll

import "time"

// Interval is how often a condition is asked.
const Interval = 20 * time.Millisecond

// Until asks cond every Interval until it holds or d has passed, and reports whether it held
// (asked once more at the deadline).
func Until(d time.Duration, cond func() bool) bool {
	ok, _ := UntilErr(d, func() (bool, error) { return cond(), nil })
	return ok
}

// UntilErr is Until for a condition that can fail to be read: the first error ends the wait.
func UntilErr(d time.Duration, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if ok || err != nil || !time.Now().Before(deadline) {
			return ok, err
		}
		time.Sleep(Interval)
	}
}
