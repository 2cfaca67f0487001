// Package e2e runs migranet's front door as a new user would: `make dev`'s program, from start to
// "migranet dev: ready" to Ctrl-C, checking that nothing it started is left running.
package e2e
