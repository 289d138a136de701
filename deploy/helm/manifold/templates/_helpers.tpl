{{- define "manifold.name" -}}{{ .Release.Name }}-manifold{{- end -}}
{{- define "manifold.labels" -}}
app.kubernetes.io/name: manifold
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
