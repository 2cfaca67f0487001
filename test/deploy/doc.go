// Package deploy checks the install an admin runs: `make deploy` applies the default overlay to
// a fresh local control plane with server-side apply, every object is accepted, the webhook
// configuration points at the Service, and the Deployment's pods pass the namespace's
// restricted Pod Security level and get scheduled. The cert-manager overlay is rendered and
// checked (cert-manager itself does not run here).
package deploy
