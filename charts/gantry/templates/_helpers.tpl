{{/*
Shared pieces of the Gantry chart: object names, labels, the image.
Object names are "<release>-<part>" ("gantry-controller" for the release
"gantry"), so the default release renders manifests/'s names.
*/}}

{{- define "gantry.fullname" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" . "component" "node") */}}
{{- define "gantry.selectorLabels" -}}
app.kubernetes.io/name: gantry
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gantry.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{/* imagePullPolicy and imagePullSecrets lines, or "" when unset. */}}
{{- define "gantry.pullPolicy" -}}
{{- with .Values.image.pullPolicy -}}
imagePullPolicy: {{ . }}
{{- end -}}
{{- end -}}

{{- define "gantry.pullSecrets" -}}
{{- with .Values.imagePullSecrets -}}
imagePullSecrets:
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/* A ClusterRoleBinding or RoleBinding of one ServiceAccount:
     (dict "ctx" . "kind" "ClusterRoleBinding" "name" N "namespace" NS
           "sa" SA "roleKind" "ClusterRole" "role" R) */}}
{{- define "gantry.binding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ .kind }}
metadata:
  name: {{ .name }}
  {{- with .namespace }}
  namespace: {{ . }}
  {{- end }}
subjects:
  - kind: ServiceAccount
    name: {{ .sa }}
    namespace: {{ .ctx.Release.Namespace }}
roleRef:
  kind: {{ .roleKind }}
  name: {{ .role }}
  apiGroup: rbac.authorization.k8s.io
{{- end -}}

{{/* A PodDisruptionBudget: (dict "ctx" . "name" N "component" C) */}}
{{- define "gantry.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .ctx.Release.Namespace }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      {{- include "gantry.selectorLabels" . | nindent 6 }}
{{- end -}}

{{/* The six csi.storage.k8s.io secret parameters of a dataset class. */}}
{{- define "gantry.secretParams" -}}
{{- $ns := .ctx.Release.Namespace -}}
{{- range list "provisioner" "controller-expand" "node-stage" }}
csi.storage.k8s.io/{{ . }}-secret-name: {{ $.secret }}
csi.storage.k8s.io/{{ . }}-secret-namespace: {{ $ns }}
{{- end -}}
{{- end -}}
