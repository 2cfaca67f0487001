// Package poll waits for a condition that another process makes true — a QEMU state read over
// QMP, a counter a node process keeps, a log line a proxy writes — and that sends no event the
// harness could wait on instead: it asks every Interval until the condition holds or the time is
// up. It is the one place the harness sleeps.
package poll
