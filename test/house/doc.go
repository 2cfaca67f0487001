// Package house holds the checks of the house itself, run by `make test`: the layering of the
// packages (settings ← {netcontroller, webhook} ← cmd, the admission engine below its handlers,
// nothing importing cmd or test) and a tree without binaries or files over 1 MiB.
package house
