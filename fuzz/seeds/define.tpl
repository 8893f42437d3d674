{{- define "x" -}}
{{ if .Values.a }}{{ range $i, $v := .Values.l }}{{ $v | quote }}{{ end }}{{ else }}{{ template "y" . }}{{ end }}
{{- end -}}