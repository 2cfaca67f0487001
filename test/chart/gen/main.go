package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/migranet/migranet/test/chart"
)

func main() {
	kubectl := flag.String("kubectl", "kubectl", "the kubectl whose kustomize renders manifests/ (make chart passes the pinned one)")
	root := flag.String("root", ".", "the migranet tree")
	dir := flag.String("chart", "manifests/chart", "the chart's directory")
	check := flag.Bool("check", false, "write nothing; fail naming each generated file that differs")
	flag.Parse()
	if err := run(context.Background(), *kubectl, *root, *dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubectl, root, dir string, check bool) error {
	r, err := chart.Render(ctx, kubectl, root)
	if err != nil {
		return err
	}
	files, err := chart.Generate(r)
	if err != nil {
		return err
	}
	if !check {
		return chart.Write(dir, files)
	}
	problems, err := chart.Drift(dir, files)
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "chart: %s/%s\n", dir, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d generated files of %s are not what manifests/ renders: run make chart", len(problems), dir)
	}
	return nil
}
