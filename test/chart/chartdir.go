package chart

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// generatedOnDisk lists the files of the chart at dir the generator owns: every .yaml in
// templates/ and everything in files/ (the hand-written templates are .tpl).
func generatedOnDisk(dir string) ([]string, error) {
	var names []string
	for _, pattern := range []string{templatesDir + "/*.yaml", filepath.Dir(monitoringFile) + "/*"} {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			rel, err := filepath.Rel(dir, m)
			if err != nil {
				return nil, err
			}
			names = append(names, filepath.ToSlash(rel))
		}
	}
	sort.Strings(names)
	return names, nil
}

// Write puts the generated files into the chart at dir and removes generated files that are no
// longer generated (a kind the manifests dropped).
func Write(dir string, files map[string][]byte) error {
	old, err := generatedOnDisk(dir)
	if err != nil {
		return err
	}
	for _, name := range old {
		if _, ok := files[name]; !ok {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Drift names each generated file of the chart at dir that differs from files, is missing or
// is no longer generated; none when the chart is what the generator writes.
func Drift(dir string, files map[string][]byte) ([]string, error) {
	var problems []string
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		have, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case os.IsNotExist(err):
			problems = append(problems, name+" is missing")
		case err != nil:
			return nil, err
		case !bytes.Equal(have, files[name]):
			problems = append(problems, fmt.Sprintf("%s differs from what the generator writes, from line %d", name, firstDiff(have, files[name])))
		}
	}
	old, err := generatedOnDisk(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range old {
		if _, ok := files[name]; !ok {
			problems = append(problems, name+" is no longer generated")
		}
	}
	return problems, nil
}

// firstDiff is the number of the first line where a and b differ.
func firstDiff(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
