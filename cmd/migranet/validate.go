package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

const validateUsage = `Usage: migranet validate [--nodes FILE] [--kubevirt FILE] [--service-cidrs FILE] [-o text|json] FILE...

Validates migranet Setting objects offline with the rules the admission webhook applies, and
Harvester's own vm-migration-network Setting (settings.harvesterhci.io) with the same rules.
FILEs hold Settings as multi-document YAML or JSON, or as a List. Without --nodes the checks
that need the cluster (cluster network on every eligible node, no overlap with the nodes' pod
ranges, one address per node) are skipped; without --service-cidrs the range is not checked
against the cluster's Service ranges. Harvester's VlanConfigs and ClusterNetworks
(network.harvesterhci.io) among the FILEs are read as the uplinks of the value's cluster network:
an uplink MTU below the migration network's (migranet's mtu, or the MTU Harvester's NAD takes)
is an error.

Output: one line per problem, "setting/<name>: <field>: <message>", and
"setting/<name>: warning: <message>" (Harvester's: "settings.harvesterhci.io/<name>: ...");
-o json prints a JSON array instead.
Exit status: 0 all settings valid, 1 a setting is invalid, 2 unreadable input or bad usage.

Flags:
`

// exit codes of runValidate.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUsage   = 2
)

// problem is one line of output.
type problem struct {
	Setting string `json:"setting"`
	// APIGroup is harvesterhci.io for Harvester's own setting, empty for migranet's.
	APIGroup string `json:"apiGroup,omitempty"`
	Field    string `json:"field"`
	Type     string `json:"type"`
	Message  string `json:"message"`
	File     string `json:"file"`
}

// warningType is the "type" of a warning in -o json output.
const warningType = "Warning"

// runValidate runs migranet validate and returns its exit code.
func runValidate(name string, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("migranet validate")
	nodesFile := fs.String("nodes", "", "file of Node objects (multi-document or a List), e.g. from `kubectl get nodes -o yaml`")
	kubevirtFile := fs.String("kubevirt", "", "file holding the KubeVirt CR, for spec.workloads.nodePlacement.nodeSelector")
	serviceFile := fs.String("service-cidrs", "", "file of ServiceCIDR objects, e.g. from `kubectl get servicecidrs -o yaml` (needs --nodes)")
	output := fs.String("o", "text", "output format: text or json")
	usage := func(w io.Writer) {
		fmt.Fprint(w, asTyped(name, validateUsage))
		printDefaults(w, fs)
	}
	files, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return exitValid
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s validate: %v\nRun '%s validate -h' for its flags.\n", name, err, name)
		return exitUsage
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, name+" validate: -o must be text or json, not %q\n", *output)
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, name+" validate: no FILE given")
		usage(stderr)
		return exitUsage
	}
	note := func(format string, a ...any) { fmt.Fprintf(stderr, name+" validate: "+format+"\n", a...) }

	var docs []settingDoc
	var uplinks settings.Uplinks
	for _, f := range files {
		d, err := readSettings(f, &uplinks, note)
		if err != nil {
			note("%v", err)
			return exitUsage
		}
		docs = append(docs, d...)
	}
	if len(docs) == 0 {
		note("no migranet.io Setting objects (nor Harvester's vm-migration-network) found in %s", strings.Join(files, ", "))
		return exitUsage
	}
	cl, err := readCluster(*nodesFile, *kubevirtFile, *serviceFile, note)
	if err != nil {
		note("%v", err)
		return exitUsage
	}

	var problems []problem
	invalid := false
	for _, d := range docs {
		errs, warns := d.errs, d.warns
		if d.setting != nil {
			eff, verrs, vwarns := settings.JudgeSetting(d.setting, cl)
			errs, warns = append(errs, verrs...), append(warns, vwarns...)
			errs = append(errs, checkUplinks(d, eff.Network, uplinks)...)
		}
		invalid = invalid || len(errs) > 0
		for _, e := range errs {
			problems = append(problems, problem{Setting: d.name, APIGroup: d.apiGroup, Field: e.Field, Type: string(e.Type), Message: e.ErrorBody(), File: d.where})
		}
		for _, w := range warns {
			fld, msg := splitWarning(w)
			problems = append(problems, problem{Setting: d.name, APIGroup: d.apiGroup, Field: fld, Type: warningType, Message: msg, File: d.where})
		}
	}
	if err := printProblems(stdout, *output, problems); err != nil {
		note("writing output: %v", err)
		return exitUsage
	}
	if invalid {
		return exitInvalid
	}
	return exitValid
}

// parseInterspersed parses flags that may appear before, between or after FILE arguments; "--"
// ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(files, rest...), nil
		}
		if len(rest) == 0 {
			return files, nil
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
}

func printProblems(w io.Writer, format string, problems []problem) error {
	if format == "json" {
		if problems == nil {
			problems = []problem{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(problems)
	}
	var b strings.Builder
	for _, p := range problems {
		ref := "setting/" + p.Setting
		if p.APIGroup != "" {
			ref = "settings." + p.APIGroup + "/" + p.Setting
		}
		if p.Type == warningType {
			fmt.Fprintf(&b, "%s: warning: %s\n", ref, joinField(p.Field, p.Message))
			continue
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", ref, p.Field, p.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// splitWarning separates the field path settings puts in front of a warning ("value.range: …").
func splitWarning(w string) (fld, msg string) {
	if i := strings.Index(w, ": "); i > 0 && !strings.ContainsAny(w[:i], " \t") {
		return w[:i], w[i+2:]
	}
	return "", w
}

func joinField(fld, msg string) string {
	if fld == "" {
		return msg
	}
	return fld + ": " + msg
}

// settingDoc is a Setting read from a file, or what kept it from being read.
type settingDoc struct {
	name     string
	where    string
	apiGroup string           // harvesterhci.io for Harvester's own setting
	setting  *v1beta1.Setting // nil when errs explain why it could not be decoded
	errs     field.ErrorList
	warns    []string
}

// object is one decoded document or List item.
type object struct {
	where      string
	raw        json.RawMessage
	kind       string
	apiVersion string
	group      string   // API group of apiVersion ("" for core)
	dups       []dupKey // duplicate YAML keys inside the object, paths from its root
}

type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// readObjects reads every document of path, expanding Lists (kind List or <Kind>List; items of a
// typed list without kind get the list's element kind), as kubectl does.
func readObjects(path string) ([]object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := splitDocuments(path, data)
	if err != nil {
		return nil, err
	}
	var out []object
	for _, d := range docs {
		objs, err := expand(d.raw, d.where, "", "", d.dups, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func expand(raw json.RawMessage, where, defaultAPIVersion, defaultKind string, dups []dupKey, depth int) ([]object, error) {
	var tm typeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("%s: not a Kubernetes object: %v", where, err)
	}
	if tm.Kind == "" {
		tm.Kind, tm.APIVersion = defaultKind, defaultAPIVersion
	}
	if tm.Kind == "" {
		return nil, fmt.Errorf("%s: object has no kind", where)
	}
	if strings.HasSuffix(tm.Kind, "List") && depth < 2 {
		var out []object
		elem := strings.TrimSuffix(tm.Kind, "List") // "" for a v1 List: its items carry their own kind
		for i, item := range tm.Items {
			objs, err := expand(item, fmt.Sprintf("%s item %d", where, i+1), tm.APIVersion, elem,
				dupsUnder(dups, fmt.Sprintf("items[%d]", i)), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	group := ""
	if i := strings.LastIndexByte(tm.APIVersion, '/'); i >= 0 {
		group = tm.APIVersion[:i]
	}
	return []object{{where: where, raw: raw, kind: tm.Kind, apiVersion: tm.APIVersion, group: group, dups: dups}}, nil
}

// readSettings reads the migranet Settings of path, and Harvester's vm-migration-network; the
// VlanConfigs and ClusterNetworks of Harvester's network controller go into up, inputs of the
// uplink MTU checks; other objects are skipped with a note.
func readSettings(path string, up *settings.Uplinks, note func(string, ...any)) ([]settingDoc, error) {
	objs, err := readObjects(path)
	if err != nil {
		return nil, err
	}
	var out []settingDoc
	for _, o := range objs {
		if ok, err := readUplink(o, up, note); ok || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if isHarvesterSetting(o) {
			d, warns, skip := decodeHarvesterSetting(o)
			if skip != "" {
				note("%s: skipping %s", o.where, skip)
				continue
			}
			d.warns = warns
			out = append(out, d)
			continue
		}
		if !isSettingLike(o) {
			note("%s: skipping %s (not a %s Setting)", o.where, o.kind, v1beta1.GroupVersion.Group)
			continue
		}
		out = append(out, decodeSetting(o))
	}
	return out, nil
}

// decodeSetting decodes a Setting strictly, as the API server does: unknown and duplicate fields
// (with their paths), a wrong apiVersion or kind, and wrong types are problems of that setting,
// reported like validation errors. The setting is still validated when only strict errors were
// found, with the value the API server would have stored (the last of duplicate keys).
func decodeSetting(o object) settingDoc {
	var loose struct {
		Metadata struct {
			Name any `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(o.raw, &loose)
	name, _ := loose.Metadata.Name.(string)
	d := settingDoc{name: name, where: o.where}
	if name == "" {
		d.name = "<unnamed>"
	}
	d.errs = checkTypeMeta(o)
	s := &v1beta1.Setting{}
	serrs, err := strictErrors(o, s)
	d.errs = append(d.errs, serrs...)
	if err == nil {
		d.setting = s
		return d
	}
	// Not decodable (a wrong type): say which field, with the standard library's words.
	err = json.Unmarshal(o.raw, &v1beta1.Setting{})
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		detail := fmt.Sprintf("must be a JSON %s, not %s", te.Type, te.Value)
		if te.Field == "value" || te.Field == "default" {
			detail += "; a Setting's value is a string holding JSON, so quote it, e.g. value: '{\"clusterNetwork\":\"migration\",...}'"
		}
		d.errs = append(d.errs, field.TypeInvalid(field.NewPath(te.Field), te.Value, detail))
	case err != nil:
		d.errs = append(d.errs, field.Invalid(field.NewPath("object"), shortText(o.raw), err.Error()))
	default:
		d.errs = append(d.errs, field.Invalid(field.NewPath("object"), shortText(o.raw), "cannot be decoded as a Setting"))
	}
	return d
}

// readCluster builds the cluster for the dependent checks, or nil (with a note) without --nodes.
func readCluster(nodesFile, kubevirtFile, serviceFile string, note func(string, ...any)) (*settings.Cluster, error) {
	if nodesFile == "" {
		if serviceFile != "" {
			note("warning: --service-cidrs is only used together with --nodes")
		}
		note("warning: no --nodes given: skipping the checks that need the cluster's nodes " +
			"(cluster network on every eligible node, no overlap with their pod ranges, one migration address per node)")
		if kubevirtFile != "" {
			note("warning: --kubevirt is only used together with --nodes")
		}
		return nil, nil
	}
	objs, err := readObjects(nodesFile)
	if err != nil {
		return nil, err
	}
	cl := &settings.Cluster{}
	for _, o := range objs {
		if o.kind != "Node" || o.group != "" {
			note("%s: skipping %s (not a Node)", o.where, o.kind)
			continue
		}
		n := &corev1.Node{}
		if err := json.Unmarshal(o.raw, n); err != nil {
			return nil, fmt.Errorf("%s: %v", o.where, err)
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	if len(cl.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no Node objects found", nodesFile)
	}
	if serviceFile != "" {
		if cl.ServiceRanges, err = readServiceRanges(serviceFile, note); err != nil {
			return nil, err
		}
	}
	if kubevirtFile == "" {
		return cl, nil
	}
	kv, err := readKubeVirt(kubevirtFile, note)
	if err != nil {
		return nil, err
	}
	cl.NodeSelector, cl.Migrations = settings.WorkloadsNodeSelector(kv), settings.MigrationLimitsOf(kv)
	return cl, nil
}

// readServiceRanges reads the spec.cidrs of the ServiceCIDR objects in path.
func readServiceRanges(path string, note func(string, ...any)) ([]netip.Prefix, error) {
	objs, err := readObjects(path)
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, o := range objs {
		if o.kind != "ServiceCIDR" || o.group != "networking.k8s.io" {
			note("%s: skipping %s (not a ServiceCIDR)", o.where, o.kind)
			continue
		}
		sc := &networkingv1.ServiceCIDR{}
		if err := json.Unmarshal(o.raw, sc); err != nil {
			return nil, fmt.Errorf("%s: %v", o.where, err)
		}
		for _, c := range sc.Spec.CIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return nil, fmt.Errorf("%s: spec.cidrs: %v", o.where, err)
			}
			out = append(out, p.Masked())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ServiceCIDR objects found", path)
	}
	return out, nil
}

// readKubeVirt reads the KubeVirt CR in path (its node placement and migration limits).
func readKubeVirt(path string, note func(string, ...any)) (*kubevirtv1.KubeVirt, error) {
	objs, err := readObjects(path)
	if err != nil {
		return nil, err
	}
	var found *object
	for i, o := range objs {
		if o.kind != "KubeVirt" || o.group != "kubevirt.io" {
			continue
		}
		if found != nil {
			note("%s: ignoring another KubeVirt CR; using the one of %s", o.where, found.where)
			continue
		}
		found = &objs[i]
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no kubevirt.io KubeVirt object found", path)
	}
	kv := &kubevirtv1.KubeVirt{}
	if err := json.Unmarshal(found.raw, kv); err != nil {
		return nil, fmt.Errorf("%s: %v", found.where, err)
	}
	return kv, nil
}

// shortText is the start of raw, for error messages.
func shortText(raw []byte) string {
	const limit = 60
	if len(raw) <= limit {
		return string(raw)
	}
	return string(raw[:limit]) + "..."
}
