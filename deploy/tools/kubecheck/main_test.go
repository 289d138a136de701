package main

import (
	"strings"
	"testing"
)

// good is a Deployment and a Service as the chart renders them, cut down.
const good = `# Source: manifold/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: m
spec:
  selector: {app: m}
  ports:
    - {name: http, port: 7777, targetPort: http}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: m
spec:
  selector:
    matchLabels: {app: m}
  template:
    metadata:
      labels: {app: m}
    spec:
      containers:
        - name: manifold
          image: manifold:dev
          ports: [{name: http, containerPort: 7777}]
          readinessProbe:
            httpGet: {path: /readyz, port: http}
          securityContext:
            readOnlyRootFilesystem: true
          resources:
            requests: {cpu: 50m, memory: 48Mi}
          volumeMounts: [{name: tmp, mountPath: /tmp}]
      volumes: [{name: tmp, emptyDir: {}}]
`

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string // replaced in good
		want     string // in the error; "" for none
	}{
		{name: "valid"},
		{name: "unknown field", old: "readOnlyRootFilesystem", new: "readOnlyRootFS", want: `unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFS"`},
		{name: "wrong type", old: "containerPort: 7777", new: "containerPort: seven", want: "containerPort"},
		{name: "duplicate field", old: "  name: m\nspec:\n  selector:\n", new: "  name: m\n  name: other\nspec:\n  selector:\n", want: `key "name" already set`},
		{name: "bad quantity", old: "memory: 48Mi", new: "memory: 48 MB", want: "quantities must match"},
		{name: "unknown kind", old: "kind: Service", new: "kind: Servic", want: `no kind "Servic"`},
		{name: "wrong apiVersion", old: "apps/v1", new: "apps/v2", want: "apps/v2"},
		{name: "no name", old: "  name: m\nspec:\n  selector:\n", new: "  labels: {}\nspec:\n  selector:\n", want: "metadata.name is empty"},
		{name: "selector mismatch", old: "matchLabels: {app: m}", new: "matchLabels: {app: x}", want: "does not match the pod template's labels"},
		{name: "no image", old: "image: manifold:dev", new: "image: \"\"", want: "spec.containers[0].image is empty"},
		{name: "probe port", old: "port: http}\n          securityContext", new: "port: web}\n          securityContext", want: `readinessProbe.httpGet.port "web"`},
		{name: "volume", old: "{name: tmp, mountPath", new: "{name: scratch, mountPath", want: `"scratch" is not a volume`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good
			if tc.old != "" {
				if !strings.Contains(in, tc.old) {
					t.Fatalf("the manifest has no %q to replace", tc.old)
				}
				in = strings.Replace(in, tc.old, tc.new, 1)
			}
			n, err := check("test.yaml", strings.NewReader(in))
			if tc.want == "" {
				if err != nil || n != 2 {
					t.Fatalf("check = %d, %v; want 2 objects, no error", n, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check error = %v; want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "test.yaml: document ") {
				t.Errorf("check error = %v; want it to name the file and document", err)
			}
		})
	}
}

func TestCheckEmpty(t *testing.T) {
	if _, err := check("e.yaml", strings.NewReader("# nothing\n---\n")); err == nil {
		t.Fatal("check of a file without objects passed")
	}
}
