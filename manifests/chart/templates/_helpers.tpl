{{/*
migranet.image: the containers' image, repository[:tag][@digest].
*/}}
{{- define "migranet.image" -}}
{{- $image := .Values.image -}}
{{- $image.repository -}}
{{- with $image.tag }}:{{ . }}{{ end -}}
{{- with $image.digest }}@{{ . }}{{ end -}}
{{- end }}
