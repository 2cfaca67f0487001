package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Stream copies a `go test -json` stream from r to raw unchanged and prints to out what a
// plain `go test` would: one line per package, the output of every failed test and of a failed
// package, build errors, and, unlike go test, why each skipped test skipped. It returns the
// collector holding every package it saw.
func Stream(r io.Reader, raw, out io.Writer) (*Collector, error) {
	c := NewCollector()
	p := &printer{out: out, lines: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if _, err := raw.Write(append(line, '\n')); err != nil {
			return c, err
		}
		var e Event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(out, string(line)) // not an event: go test itself speaking
			continue
		}
		p.event(e, c.Add(e))
	}
	return c, sc.Err()
}

// printer buffers each test's output until its verdict.
type printer struct {
	out    io.Writer
	lines  map[string][]string // package + "\x00" + test -> output so far
	failed map[string][]string // package -> failed tests, in the order they failed
}

func (p *printer) event(e Event, s *Suite) {
	key := e.Package + "\x00" + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(p.out, e.Output)
	case e.Action == "output":
		p.lines[key] = append(p.lines[key], e.Output)
	case e.Test != "" && e.Action == "fail":
		if p.failed == nil {
			p.failed = map[string][]string{}
		}
		p.failed[e.Package] = append(p.failed[e.Package], e.Test)
	case e.Test != "" && e.Action == "skip":
		for _, l := range p.lines[key] {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "=== ") {
				fmt.Fprintf(p.out, "    %s\n", t)
			}
		}
		delete(p.lines, key)
	case e.Test != "" && e.Action == "pass":
		delete(p.lines, key)
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		p.verdict(e, s)
	}
}

func (p *printer) verdict(e Event, s *Suite) {
	if e.Action == "fail" {
		for _, t := range p.failed[e.Package] {
			for _, l := range p.lines[e.Package+"\x00"+t] {
				fmt.Fprint(p.out, l)
			}
		}
		for _, l := range p.lines[e.Package+"\x00"] {
			fmt.Fprint(p.out, l)
		}
	}
	for k := range p.lines {
		if strings.HasPrefix(k, e.Package+"\x00") {
			delete(p.lines, k)
		}
	}
	delete(p.failed, e.Package)
	switch s.Outcome {
	case "no tests":
		fmt.Fprintf(p.out, "?    %s [no test files]\n", s.Package)
	default:
		fmt.Fprintf(p.out, "%-4s %s %.1fs (%d passed, %d failed, %d skipped)\n",
			s.Outcome, s.Package, s.Seconds, s.Passed, s.Failed, s.Skipped)
	}
}
