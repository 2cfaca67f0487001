package qemu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

// MigrationCPU is the CPU time, in seconds, that QEMU process pid has used so
// far outside its vCPU threads ("CPU n/TCG"; the VM is started with
// debug-threads=on): the migration threads (live_migration, multifd), the main
// loop, which receives an incoming migration, and threads that have already
// exited. A running guest's own execution is left out, so two readings around a
// migration give what moving it cost QEMU.
func MigrationCPU(pid int) (float64, error) {
	total, _, err := statCPU(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		cpu, comm, err := statCPU(t)
		if err != nil {
			continue // the thread has exited: its time is in the process's total
		}
		if strings.HasPrefix(comm, "CPU ") {
			total -= cpu
		}
	}
	return total, nil
}

// statCPU reads utime + stime (seconds) and the command name of a /proc stat file.
func statCPU(path string) (float64, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, "", fmt.Errorf("%s: unexpected format", path)
	}
	// After the command: state (field 3) ... utime (14), stime (15).
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return 0, "", fmt.Errorf("%s: unexpected format", path)
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, "", fmt.Errorf("%s: unexpected format", path)
	}
	return (u + st) / clockTicks, s[open+1 : end], nil
}
