{{/* Every object's name starts with this: bench-<Cluster name>. */}}
{{- define "bench.prefix" -}}
bench-{{ required "cluster.name comes from the Cluster (cluster-addon-values.yaml)" .Values.cluster.name }}
{{- end }}

{{/* The Cluster's own namespace: objects of two Clusters sharing an API server never meet. */}}
{{- define "bench.namespace" -}}
{{ include "bench.prefix" . }}
{{- end }}

{{/* Labels of every object; helm.sh/chart changes with each release, as in real charts. */}}
{{- define "bench.labels" -}}
app.kubernetes.io/part-of: bench-addons
app.kubernetes.io/instance: {{ include "bench.prefix" . }}
app.kubernetes.io/version: {{ .Values.addonVersion | quote }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{/* A pod template: selector labels, one container of `image`. */}}
{{- define "bench.pod" -}}
metadata:
  labels:
    app.kubernetes.io/name: {{ .component }}
    app.kubernetes.io/instance: {{ .prefix }}
spec:
  serviceAccountName: {{ .prefix }}-{{ .component }}
  containers:
    - name: {{ .component }}
      image: {{ .image }}:{{ .version }}
      args: ["--cluster={{ .cluster }}"]
      resources:
        requests:
          cpu: 10m
          memory: 32Mi
{{- end }}
