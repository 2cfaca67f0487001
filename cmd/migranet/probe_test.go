//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestProbeFlags(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of the error, "" for none
	}{
		{[]string{"--node=n1"}, nil},
		{[]string{}, []string{"--node: Required value"}},
		{[]string{"--node=n1", "--port=0"}, []string{"--port: Invalid value: 0: must be a UDP port"}},
		{[]string{"--node=n1", "--interval=3s"}, []string{"--interval: Invalid value: \"3s\": must be at least (--tries + 2) × --timeout = 5s"}},
		{[]string{"--node=n1", "--interval=20500ms"}, []string{"--interval", "whole seconds"}},
		{[]string{"--node=n1", "--timeout=0s", "--tries=0", "--max-rate=0"}, []string{"--timeout", "--tries", "--max-rate"}},
		{[]string{"--node=n1", "--agent-selector="}, []string{"--agent-selector", "non-empty"}},
		{[]string{"--node=n1", "extra"}, []string{"takes no arguments"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := parseProbeFlags(tt.args)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	var out, errOut bytes.Buffer
	if code := run(defaultName, []string{"probe", "--port=-1", "--node=x"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--port") {
		t.Errorf("exit %d, stderr %q: want 2 naming --port", code, errOut.String())
	}
}
