// Package kubernetes holds ftctl agent's manifests (ftctl-agent.yaml); its test checks them
// against the Kubernetes API's own types, strictly, and holds the choices docs/fleet.md makes.
package kubernetes

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ftctl/ftctl/profile"
)

// docs splits a multi-document YAML file.
func docs(t *testing.T, file string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// strict decodes a document into the API type of its kind as the API server's strict field
// validation does (sigs.k8s.io/json, case-sensitive): an unknown field, a field of another
// case, a duplicate or a wrong type fails.
func strict(t *testing.T, d []byte, v any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(d)
	if err != nil {
		t.Fatalf("%v\n%s", err, d)
	}
	serr, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		t.Fatalf("%v\n%s", err, d)
	}
	for _, e := range serr {
		t.Errorf("strict: %v", e)
	}
}

func TestManifests(t *testing.T) {
	var ds *appsv1.DaemonSet
	var cm *corev1.ConfigMap
	kinds := map[string]int{}
	for _, d := range docs(t, "ftctl-agent.yaml") {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(d, &head); err != nil {
			t.Fatal(err)
		}
		kinds[head.Kind]++
		switch head.APIVersion + " " + head.Kind {
		case "v1 Namespace":
			strict(t, d, &corev1.Namespace{})
		case "v1 ConfigMap":
			cm = &corev1.ConfigMap{}
			strict(t, d, cm)
		case "apps/v1 DaemonSet":
			ds = &appsv1.DaemonSet{}
			strict(t, d, ds)
		case "v1 Service":
			strict(t, d, &corev1.Service{})
		default:
			t.Errorf("unexpected %s %s", head.APIVersion, head.Kind)
		}
	}
	if ds == nil || cm == nil || kinds["Service"] != 1 {
		t.Fatalf("want a DaemonSet, a ConfigMap and a Service: %v", kinds)
	}
	checkDaemonSet(t, ds)
	// the ConfigMap's profile is one ftctl takes
	p, err := profile.Load("profile.yaml", []byte(cm.Data["profile.yaml"]))
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		t.Errorf("the ConfigMap's profile: %v", err)
	}
}

// checkDaemonSet holds the choices the manifest documents: no API token, no host pid, a
// read-only root, every capability dropped, no privilege, served on the pod's address only.
func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	spec := ds.Spec.Template.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken || spec.HostPID || spec.HostNetwork {
		t.Errorf("token %v, hostPID %v, hostNetwork %v", spec.AutomountServiceAccountToken, spec.HostPID, spec.HostNetwork)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Privileged == nil || *sc.Privileged ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("security context %+v", sc)
	}
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--listen $(POD_IP):9469") || strings.Contains(args, "0.0.0.0") ||
		!strings.Contains(args, "--tracefs /host/sys/kernel/tracing") || c.Args[0] != "agent" {
		t.Errorf("args %q", args)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["tracefs"] != "/host/sys/kernel/tracing" || mounts["state"] != "/run/ftctl" || mounts["profile"] != "/etc/ftctl" {
		t.Errorf("mounts %v", mounts)
	}
}
