{{/* The versioned name of every template object: <release>-<chart version>. Rendered as part of
a cluster-stack release, that is the ClusterClass name of the scheme, e.g.
docker-example-1-30-v2 (release docker-example-1-30, chart version v2). */}}
{{- define "cluster-class.versionedName" -}}
{{- printf "%s-%s" .Release.Name .Chart.Version | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels shared by all objects. */}}
{{- define "cluster-class.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The node image for a Kubernetes version. */}}
{{- define "cluster-class.nodeImage" -}}
{{- default (printf "kindest/node:%s" .Values.kubernetesVersion) .Values.images.kindNode -}}
{{- end -}}
