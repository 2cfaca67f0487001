package main

import (
	"path/filepath"
	"regexp"
	"strings"
)

// defaultName is the command as `make build` names it.
const defaultName = "migranet"

// commandName is the command as the user typed it, from the path the binary was run as (os.Args[0]):
// kubectl runs its plugin `kubectl migranet` as the binary kubectl-migranet on PATH (krew installs
// it so; kubectl-migranet.exe on windows), so that name is "kubectl migranet"; any other name is
// "migranet".
func commandName(arg0 string) string {
	base := strings.TrimSuffix(filepath.Base(strings.ReplaceAll(arg0, `\`, "/")), ".exe")
	if base == "kubectl-migranet" {
		return "kubectl migranet"
	}
	return defaultName
}

// asTyped rewrites the command lines of text, a help or error text written for `migranet`, for the
// command name the user typed: "migranet status" becomes "kubectl migranet status". Prose
// ("migranet's webhook", "migranet Setting") and other names ("migranet-probe") stay.
func asTyped(name, text string) string {
	if name == defaultName {
		return text
	}
	// A command line: "migranet" before a subcommand or placeholder, or as a message's "migranet:"
	// prefix; the text's own "kubectl migranet" is matched too, to be left as it is.
	typedCommand := regexp.MustCompile(`(kubectl )?\bmigranet( (?:manager|dev|validate|status|preflight|probe|version|help)\b| <command>|:)`)
	return typedCommand.ReplaceAllStringFunc(text, func(m string) string {
		if strings.HasPrefix(m, "kubectl ") {
			return m
		}
		return name + strings.TrimPrefix(m, defaultName)
	})
}
