// helm-template-standin: a stand-in for `helm template`, used by the tests
// of charts/gantry because Helm itself is not packaged in Debian and cannot
// be downloaded here. It is NOT Helm: it renders one chart the way Helm's
// engine does, closely enough for the chart's tests to mean something, and
// says below what it leaves out.
//
// What it does as Helm does:
//   - Go text/template with missingkey=zero and "<no value>" erased; every
//     file under templates/ is parsed, named "<chart>/templates/<path>";
//     files starting with "_" only define templates; NOTES.txt is skipped;
//     output that is only whitespace is dropped.
//   - Functions: sprig's TxtFuncMap without env and expandenv (Helm removes
//     them), plus include, tpl, required, toYaml, fromYaml, fromYamlArray,
//     toJson, fromJson, fromJsonArray, and lookup (an empty map, as
//     `helm template` answers without a cluster).
//   - .Values: values.yaml, deep-merged with each -f file in order, then each
//     --set path=value (maps merge, anything else is replaced, null deletes
//     a key). Numbers from YAML files are float64 as in Helm (it decodes
//     values through JSON); --set integers are int64 as in Helm.
//   - .Release (Name, Namespace, IsInstall, IsUpgrade, Revision, Service),
//     .Chart (Chart.yaml with Helm's field names: Name, Version, AppVersion,
//     ...), .Capabilities (KubeVersion, APIVersions.Has over the built-in
//     group/versions, HelmVersion), .Template (Name, BasePath), .Files.Get.
//   - Every rendered document must parse as YAML; documents come out sorted
//     by Helm's install order of kinds, each under a "# Source:" line.
//
// What it leaves out: subcharts and dependencies, hooks, crds/,
// values.schema.json, .Files.Glob/AsConfig/AsSecrets, toToml, --set with list
// indexes or escaped dots, and toYaml's exact layout (yaml.v3 indents block
// sequences under their key by two spaces; Helm's sigs.k8s.io/yaml does not:
// both are the same YAML).
//
// Usage: helm-template-standin [--name R] [--namespace NS] [-f FILE]...
//
//	[--set PATH=VALUE]... CHART_DIR
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

// recursionMax bounds nested include calls of one template, as Helm does.
const recursionMax = 1000

// installOrder is Helm's order of kinds in its output (releaseutil.InstallOrder).
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
	"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService",
}

// builtinAPIVersions answers .Capabilities.APIVersions.Has.
var builtinAPIVersions = []string{
	"v1", "apps/v1", "batch/v1", "policy/v1", "rbac.authorization.k8s.io/v1",
	"storage.k8s.io/v1", "coordination.k8s.io/v1", "networking.k8s.io/v1",
	"scheduling.k8s.io/v1", "apiextensions.k8s.io/v1", "admissionregistration.k8s.io/v1",
	"events.k8s.io/v1", "autoscaling/v2", "discovery.k8s.io/v1",
}

type apiVersions []string

// Has reports whether the API group/version (or group/version/Kind) is served.
func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v || strings.HasPrefix(v, x+"/") {
			return true
		}
	}
	return false
}

type files struct{ dir string }

// Get returns the content of a file of the chart, or "" as Helm does.
func (f files) Get(name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, filepath.Clean("/"+name)))
	if err != nil {
		return ""
	}
	return string(b)
}

type multiFlag []string

func (m *multiFlag) add(v string) { *m = append(*m, v) }

// toFloats turns every integer decoded by yaml.v3 into float64, the type
// Helm's JSON-based decoding gives every number in .Values.
func toFloats(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = toFloats(x)
		}
		return t
	case []interface{}:
		for i, x := range t {
			t[i] = toFloats(x)
		}
		return t
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case uint64:
		return float64(t)
	}
	return v
}

func readYAMLMap(path string) (map[string]interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if m == nil {
		m = map[string]interface{}{}
	}
	return toFloats(m).(map[string]interface{}), nil
}

// merge overlays @over on @base: maps merge, anything else replaces, and a
// null in @over deletes the key (Helm's coalescing of user values).
func merge(base, over map[string]interface{}) map[string]interface{} {
	for k, v := range over {
		if v == nil {
			delete(base, k)
			continue
		}
		bm, bok := base[k].(map[string]interface{})
		om, ook := v.(map[string]interface{})
		if bok && ook {
			base[k] = merge(bm, om)
		} else {
			base[k] = v
		}
	}
	return base
}

// typedSetValue converts a --set value as Helm's strvals does.
func typedSetValue(s string) interface{} {
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if len(s) > 0 && (s[0] != '0' || s == "0") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	return s
}

func applySet(vals map[string]interface{}, expr string) error {
	eq := strings.IndexByte(expr, '=')
	if eq <= 0 {
		return fmt.Errorf("--set %q: want PATH=VALUE", expr)
	}
	path := strings.Split(expr[:eq], ".")
	cur := vals
	for _, p := range path[:len(path)-1] {
		if p == "" || strings.ContainsAny(p, "[]") {
			return fmt.Errorf("--set %q: unsupported path", expr)
		}
		next, ok := cur[p].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			cur[p] = next
		}
		cur = next
	}
	last := path[len(path)-1]
	v := typedSetValue(expr[eq+1:])
	if v == nil {
		delete(cur, last)
	} else {
		cur[last] = v
	}
	return nil
}

// chartMeta maps Chart.yaml's keys to Helm's .Chart field names.
func chartMeta(raw map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range raw {
		switch k {
		case "apiVersion":
			out["APIVersion"] = v
		case "appVersion":
			out["AppVersion"] = v
		case "kubeVersion":
			out["KubeVersion"] = v
		default:
			out[strings.ToUpper(k[:1])+k[1:]] = v
		}
	}
	return out
}

// viaJSON round-trips @v through encoding/json so that numbers print as Helm
// prints them (1099511627776, not 1.099511627776e+12).
func viaJSON(v interface{}) (interface{}, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out interface{}
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	return numbers(out), nil
}

// numbers turns json.Number into int64 (or float64 when it has a fraction),
// which yaml.v3 prints as plain numbers.
func numbers(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = numbers(x)
		}
	case []interface{}:
		for i, x := range t {
			t[i] = numbers(x)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func toYAML(v interface{}) string {
	jv, err := viaJSON(v)
	if err != nil {
		return ""
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(jv); err != nil {
		return ""
	}
	enc.Close()
	return strings.TrimSuffix(buf.String(), "\n")
}

func funcMap(root **template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	depth := map[string]int{}
	f["include"] = func(name string, data interface{}) (string, error) {
		if depth[name] > recursionMax {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		depth[name]++
		defer func() { depth[name]-- }()
		var buf strings.Builder
		err := (*root).ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := (*root).Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		var buf strings.Builder
		if err := t.Execute(&buf, data); err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(msg)
		}
		return v, nil
	}
	f["toYaml"] = toYAML
	f["fromYaml"] = decodeMap(yaml.Unmarshal)
	f["fromYamlArray"] = decodeList(yaml.Unmarshal)
	f["toJson"] = func(v interface{}) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	f["fromJson"] = decodeMap(json.Unmarshal)
	f["fromJsonArray"] = decodeList(json.Unmarshal)
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	return f
}

type unmarshalFn func([]byte, interface{}) error

// decodeMap makes Helm's fromYaml/fromJson: a map, or {"Error": why}.
func decodeMap(unmarshal unmarshalFn) func(string) map[string]interface{} {
	return func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := unmarshal([]byte(s), &m); err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
}

// decodeList makes Helm's fromYamlArray/fromJsonArray: a list, or [why].
func decodeList(unmarshal unmarshalFn) func(string) []interface{} {
	return func(s string) []interface{} {
		var a []interface{}
		if err := unmarshal([]byte(s), &a); err != nil {
			return []interface{}{err.Error()}
		}
		return a
	}
}

type doc struct {
	source, kind, name, text string
	order                    int
}

func kindOrder(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}

// splitDocs cuts a rendered file at "---" lines and checks each part parses.
func splitDocs(source, text string) ([]doc, error) {
	var out []doc
	for _, part := range strings.Split("\n"+text, "\n---") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var head struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		}
		var any interface{}
		if err := yaml.Unmarshal([]byte(part), &any); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %v", source, err)
		}
		if any == nil {
			continue
		}
		if err := yaml.Unmarshal([]byte(part), &head); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %v", source, err)
		}
		out = append(out, doc{source: source, kind: head.Kind, name: head.Metadata.Name,
			text: strings.Trim(part, "\n"), order: kindOrder(head.Kind)})
	}
	return out, nil
}

func run(args []string) error {
	release, namespace := "gantry", "default"
	var valueFiles, sets multiFlag
	chartDir := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		var err error
		var v string
		switch a {
		case "--name":
			release, err = next()
		case "--namespace", "-n":
			namespace, err = next()
		case "-f", "--values":
			v, err = next()
			valueFiles.add(v)
		case "--set":
			v, err = next()
			sets.add(v)
		default:
			if strings.HasPrefix(a, "-") || chartDir != "" {
				return fmt.Errorf("unexpected argument %q", a)
			}
			chartDir = a
		}
		if err != nil {
			return err
		}
	}
	if chartDir == "" {
		return errors.New("usage: helm-template-standin [--name R] [--namespace NS] [-f FILE]... [--set PATH=VALUE]... CHART_DIR")
	}

	rawChart, err := readYAMLMap(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	chart := chartMeta(rawChart)
	chartName, _ := chart["Name"].(string)
	if chartName == "" {
		return errors.New("Chart.yaml: name is required")
	}
	values, err := readYAMLMap(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range valueFiles {
		over, err := readYAMLMap(f)
		if err != nil {
			return err
		}
		values = merge(values, over)
	}
	for _, s := range sets {
		if err := applySet(values, s); err != nil {
			return err
		}
	}

	var root *template.Template
	root = template.New("gotpl").Option("missingkey=zero").Funcs(funcMap(&root))
	var names []string
	tdir := filepath.Join(chartDir, "templates")
	err = filepath.WalkDir(tdir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartDir, p)
		name := chartName + "/" + filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := root.New(name).Parse(string(b)); err != nil {
			return fmt.Errorf("parse error in %s", strings.TrimPrefix(err.Error(), "template: "))
		}
		names = append(names, name)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)

	top := map[string]interface{}{
		"Values": values,
		"Chart":  chart,
		"Release": map[string]interface{}{
			"Name": release, "Namespace": namespace, "IsInstall": true,
			"IsUpgrade": false, "Revision": 1, "Service": "Helm",
		},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{
				"Version": "v1.31.0", "GitVersion": "v1.31.0", "Major": "1", "Minor": "31",
			},
			"APIVersions": apiVersions(builtinAPIVersions),
			"HelmVersion": map[string]interface{}{"Version": "v3-standin"},
		},
		"Files": files{chartDir},
	}
	var docs []doc
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		data := map[string]interface{}{}
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{
			"Name": name, "BasePath": chartName + "/templates",
		}
		var buf strings.Builder
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return err
		}
		out := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.TrimSpace(out) == "" {
			continue
		}
		ds, err := splitDocs(name, out)
		if err != nil {
			return err
		}
		docs = append(docs, ds...)
	}
	sort.SliceStable(docs, func(i, j int) bool {
		if docs[i].order != docs[j].order {
			return docs[i].order < docs[j].order
		}
		return docs[i].name < docs[j].name
	})
	var w strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&w, "---\n# Source: %s\n%s\n", d.source, d.text)
	}
	_, err = os.Stdout.WriteString(w.String())
	return err
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
