{{- /*
Names are fixed: the controller's defaults (--webhook-service-name,
--webhook-secret-name, the two webhook configuration names) and deploy/ use
them, and the webhook configurations are cluster-scoped, so one release per
cluster.
*/ -}}
{{- define "jobset.namespace" -}}
{{ .Values.namespace.name }}
{{- end }}

{{- /* Labels on every object's metadata (deploy/kustomization.yaml's labels). */ -}}
{{- define "jobset.labels" -}}
app.kubernetes.io/name: jobset
app.kubernetes.io/part-of: jobset
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- /* The controller's ServiceAccount as a subject of a binding. */ -}}
{{- define "jobset.subject" -}}
subjects:
- kind: ServiceAccount
  name: jobset-controller-manager
  namespace: {{ include "jobset.namespace" . }}
{{- end }}

{{- /* The internal certificate management needs the Secret and the webhook
configurations; cert-manager or no webhooks need neither. */ -}}
{{- define "jobset.internalCerts" -}}
{{- if and .Values.webhook.enable (not .Values.certManager.enable) }}true{{ end }}
{{- end }}

{{- /* cert-manager's CA injection annotation on the webhook configurations. */ -}}
{{- define "jobset.caInjection" -}}
{{- if .Values.certManager.enable }}
  annotations:
    cert-manager.io/inject-ca-from: {{ include "jobset.namespace" . }}/jobset-serving-cert
{{- end }}
{{- end }}

{{- define "jobset.featureGates" -}}
{{- $g := list }}
{{- range $k, $v := .Values.controller.featureGates }}
{{- $g = append $g (printf "%s=%t" $k $v) }}
{{- end }}
{{- join "," $g }}
{{- end }}
