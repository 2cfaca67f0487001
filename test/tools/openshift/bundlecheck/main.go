// Command bundlecheck validates migranet's OLM bundle with the operator framework's own library
// (github.com/operator-framework/api): the bundle loader (pkg/manifests.GetBundleFromDir) and the
// validators operator-sdk's `bundle validate` runs by default (validation.DefaultBundleValidators:
// CSV, CRDs, bundle) plus the OperatorHub, category, capability, good-practice and object
// validators. Then it checks what those validators leave out and OLM needs:
//
//   - every webhook definition names a Deployment of the install strategy (OLM issues the serving
//     certificate and the Service `<deployment>-service` per Deployment: certresources.go,
//     installCertRequirementsForDeployment), whose container exposes the target port;
//   - with -webhooks, the CSV carries every webhook of that rendered configuration (manifests/webhook
//     as kustomize renders it) with its rules, path, failure policy, side effects, timeout and
//     object selector, and no other.
//
// Usage:
//
//	bundlecheck -bundle DIR [-webhooks FILE] [-k8s-version 1.34]
//
// Exit status 0: valid (warnings are printed); 1: invalid (each error on stderr); 2: bad usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bundlecheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("bundle", "", "the bundle directory (manifests/ and metadata/)")
	webhooks := fs.String("webhooks", "", "rendered manifests whose webhook configurations the CSV must carry")
	k8sVersion := fs.String("k8s-version", "1.34", "Kubernetes version for the deprecated-API and good-practice checks")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "bundlecheck: -bundle is required")
		return 2
	}
	bundle, err := manifests.GetBundleFromDir(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "FAIL loading the bundle %s: %v\n", *dir, err)
		return 1
	}
	validators := append(interfaces.Validators{}, validation.DefaultBundleValidators...)
	validators = append(validators,
		validation.OperatorHubV2Validator,
		validation.StandardCategoriesValidator,
		validation.StandardCapabilitiesValidator,
		validation.GoodPracticesValidator,
		validation.ObjectValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	objs := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": *k8sVersion})
	failed := false
	for _, r := range validators.Validate(objs...) {
		for _, e := range r.Warnings {
			fmt.Fprintf(stdout, "warning %s: %s\n", r.Name, e.Error())
		}
		for _, e := range r.Errors {
			if e.Level == errors.LevelError {
				fmt.Fprintf(stderr, "FAIL %s: %s\n", r.Name, e.Error())
				failed = true
			}
		}
	}
	for _, p := range checkWebhookDeployments(bundle) {
		fmt.Fprintln(stderr, "FAIL", p)
		failed = true
	}
	if *webhooks != "" {
		problems, err := checkWebhooksCarried(bundle, *webhooks)
		if err != nil {
			fmt.Fprintln(stderr, "bundlecheck:", err)
			return 2
		}
		for _, p := range problems {
			fmt.Fprintln(stderr, "FAIL", p)
			failed = true
		}
	}
	if failed {
		return 1
	}
	fmt.Fprintf(stdout, "ok bundle %s (bundle %s, CSV %s, %d CRDs, %d other objects, %d webhooks)\n",
		*dir, bundle.Name, bundle.CSV.Name, len(bundle.V1CRDs), len(bundle.Objects), len(bundle.CSV.Spec.WebhookDefinitions))
	return 0
}
