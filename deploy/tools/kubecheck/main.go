// Command kubecheck validates Kubernetes manifests offline, as the API
// server's strict field validation would: every YAML document is decoded
// into the typed k8s.io/api object of its apiVersion and kind, rejecting
// unknown kinds, unknown fields, duplicate fields and values of the wrong
// type, and a few rules of the API server's own validation are checked on
// top (a name on every object, containers with a name and an image, a
// Deployment's selector matching its pod template, probes naming a port the
// container declares). It reads the files named on the command line, or
// standard input, and reports every problem with its file and document
// number; it exits 1 when there is one.
//
// It does not replace a server-side dry run: defaults, admission and the
// full validation of every field are the API server's. It exists because
// CI here cannot fetch the JSON schemas that kubeconform needs.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func main() {
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader) error {
	if len(args) == 0 {
		n, err := check("<stdin>", stdin)
		if err == nil {
			fmt.Printf("kubecheck: <stdin>: %d objects valid\n", n)
		}
		return err
	}
	var errs []error
	for _, name := range args {
		f, err := os.Open(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := check(name, f)
		f.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Printf("kubecheck: %s: %d objects valid\n", name, n)
	}
	return errors.Join(errs...)
}

// decoder decodes the kinds it knows strictly.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, autoscalingv2.AddToScheme, policyv1.AddToScheme,
		batchv1.AddToScheme, networkingv1.AddToScheme, rbacv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// check validates every document of r and returns how many objects it held.
func check(name string, r io.Reader) (int, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var errs []error
	n := 0
	for doc := 1; ; doc++ {
		b, err := yr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if empty(b) {
			continue
		}
		n++
		if err := checkDoc(b); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", name, doc, err))
		}
	}
	if n == 0 && len(errs) == 0 {
		return 0, fmt.Errorf("%s: no Kubernetes object in it", name)
	}
	return n, errors.Join(errs...)
}

// empty reports whether a document holds only comments and blank lines (as
// helm template writes between objects).
func empty(b []byte) bool {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}

func checkDoc(b []byte) error {
	obj, gvk, err := decoder.Decode(b, nil, nil)
	if err != nil {
		if gvk != nil && gvk.Kind != "" {
			return fmt.Errorf("%s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
		}
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	where := gvk.Kind + " " + m.GetName()
	var errs []error
	if m.GetName() == "" {
		errs = append(errs, errors.New("metadata.name is empty"))
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		errs = append(errs, checkSelector(o.Spec.Selector, o.Spec.Template.Labels)...)
		errs = append(errs, checkPod(&o.Spec.Template.Spec)...)
	case *appsv1.StatefulSet:
		errs = append(errs, checkSelector(o.Spec.Selector, o.Spec.Template.Labels)...)
		errs = append(errs, checkPod(&o.Spec.Template.Spec)...)
	case *corev1.Pod:
		errs = append(errs, checkPod(&o.Spec)...)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

func checkSelector(sel *metav1.LabelSelector, podLabels map[string]string) []error {
	if sel == nil {
		return []error{errors.New("spec.selector is missing")}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return []error{fmt.Errorf("spec.selector: %w", err)}
	}
	if s.Empty() || !s.Matches(labels.Set(podLabels)) {
		return []error{fmt.Errorf("spec.selector %s does not match the pod template's labels %v", s, podLabels)}
	}
	return nil
}

func checkPod(spec *corev1.PodSpec) []error {
	var errs []error
	if len(spec.Containers) == 0 {
		errs = append(errs, errors.New("the pod has no containers"))
	}
	volumes := make(map[string]bool)
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for i, c := range spec.Containers {
		at := fmt.Sprintf("spec.containers[%d]", i)
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name is empty", at))
		}
		if c.Image == "" {
			errs = append(errs, fmt.Errorf("%s.image is empty", at))
		}
		ports := make(map[string]bool)
		for _, p := range c.Ports {
			if p.Name != "" {
				ports[p.Name] = true
			}
		}
		for _, pr := range []struct {
			what string
			p    *corev1.Probe
		}{{"startupProbe", c.StartupProbe}, {"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}} {
			what, p := pr.what, pr.p
			if p == nil || p.HTTPGet == nil {
				continue
			}
			if port := p.HTTPGet.Port; port.Type == intstr.String && !ports[port.StrVal] {
				errs = append(errs, fmt.Errorf("%s.%s.httpGet.port %q is not a port the container names", at, what, port.StrVal))
			}
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				errs = append(errs, fmt.Errorf("%s.volumeMounts: %q is not a volume of the pod", at, m.Name))
			}
		}
	}
	return errs
}
