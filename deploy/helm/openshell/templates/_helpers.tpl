{{/*
_helpers.tpl - names, labels and the derived settings shared by the templates.
Never renders an object itself; cross-field checks fail here with a message
naming the values involved.
*/}}

{{- define "openshell.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "openshell.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Cluster-scoped objects are shared by all releases: their names carry the namespace. */}}
{{- define "openshell.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "openshell.fullname" .) -}}
{{- end -}}

{{/* app.kubernetes.io/managed-by is Helm here; the driver selects its own
sandbox objects by managed-by=openshell, so it never touches the gateway's. */}}
{{- define "openshell.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "openshell.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "openshell.selectorLabels" -}}
app.kubernetes.io/name: {{ include "openshell.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "openshell.serviceAccountName" -}}
{{- default (include "openshell.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "openshell.sandboxNamespace" -}}
{{- default .Release.Namespace .Values.server.sandboxNamespace -}}
{{- end -}}

{{- define "openshell.gatewayEndpoint" -}}
{{- if .Values.server.gatewayEndpoint -}}
{{- .Values.server.gatewayEndpoint -}}
{{- else -}}
{{- printf "%s://%s.%s.svc:%d" (ternary "https" "http" (not (empty .Values.server.tls.secretName))) (include "openshell.fullname" .) .Release.Namespace (int .Values.server.port) -}}
{{- end -}}
{{- end -}}

{{- define "openshell.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "openshell.supervisorImage" -}}
{{- printf "%s:%s" .Values.supervisor.image.repository (default .Chart.AppVersion .Values.supervisor.image.tag) -}}
{{- end -}}

{{- define "openshell.stateClaim" -}}
{{- default (printf "%s-state" (include "openshell.fullname" .)) .Values.persistence.existingClaim -}}
{{- end -}}

{{/* A TOML inline table of strings; JSON strings are valid TOML basic strings. */}}
{{- define "openshell.tomlStringTable" -}}
{{- $parts := list -}}
{{- range $k, $v := . -}}
{{- $parts = append $parts (printf "%s = %s" (toJson $k) (toJson $v)) -}}
{{- end -}}
{ {{ join ", " $parts }} }
{{- end -}}

{{/* What the schema cannot say: combinations of values. */}}
{{- define "openshell.validate" -}}
{{- $s := .Values.server -}}
{{- if and .Values.supervisor.runtimeClassName (ne $s.topology "dedicated-supervisor") -}}
{{- fail (printf "supervisor.runtimeClassName=%q needs server.topology=dedicated-supervisor (topology %q has no supervisor Pod to place)" .Values.supervisor.runtimeClassName $s.topology) -}}
{{- end -}}
{{- if and $s.workspaceStorageClass (not $s.workspaceStorageSize) -}}
{{- fail "server.workspaceStorageClass needs server.workspaceStorageSize" -}}
{{- end -}}
{{- range $k := list "clientCaSecretName" "caSecretName" -}}
{{- if and (get $s.tls $k) (not $s.tls.secretName) -}}
{{- fail (printf "server.tls.%s needs server.tls.secretName (TLS on the gateway's port)" $k) -}}
{{- end -}}
{{- end -}}
{{- if and $s.tls.secretName $s.gatewayEndpoint (not (hasPrefix "https://" $s.gatewayEndpoint)) -}}
{{- fail (printf "server.gatewayEndpoint=%q must be https:// when server.tls.secretName is set (the gateway's port speaks TLS)" $s.gatewayEndpoint) -}}
{{- end -}}
{{- end -}}
