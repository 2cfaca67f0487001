package main

import (
	"fmt"
	"os"

	"github.com/migranet/migranet/test/results"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: summary stream FILE | summary table DIR")
	}
	switch args[0] {
	case "stream":
		f, err := os.Create(args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		c, err := results.Stream(os.Stdin, f, os.Stdout)
		if err != nil {
			return err
		}
		for _, s := range c.Suites() {
			if s.Outcome != "no tests" && s.Red() {
				return fmt.Errorf("%s failed", s.Package)
			}
		}
		return nil
	case "table":
		c, err := results.Load(args[1])
		if err != nil {
			return err
		}
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		module, err := results.ImportPath(wd)
		if err != nil {
			return err
		}
		return results.Summarize(c.Suites(), os.Getenv(results.OptOutVar), module+"/", os.Stdout)
	}
	return fmt.Errorf("unknown command %q: stream or table", args[0])
}
