package cfn

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is a parsed CloudFormation template. Values are the JSON-shaped
// tree of the template: map[string]any, []any, string, bool, int, float64
// and nil, with intrinsic functions in their long form.
type Template struct {
	Parameters map[string]map[string]any
	Conditions map[string]any
	Mappings   map[string]any
	Resources  map[string]Resource
	Outputs    map[string]map[string]any
	// Raw is the whole document.
	Raw map[string]any
}

// Resource is one entry of Resources.
type Resource struct {
	Type       string
	Properties map[string]any
	// Attributes holds the other keys of the entry (DependsOn, Condition,
	// DeletionPolicy, ...).
	Attributes map[string]any
}

// resourceKeys are the keys a resource entry may have besides Type and
// Properties.
var resourceKeys = map[string]bool{
	"DependsOn": true, "Condition": true, "DeletionPolicy": true, "UpdateReplacePolicy": true,
	"Metadata": true, "CreationPolicy": true, "UpdatePolicy": true,
}

// topKeys are the sections a template may have.
var topKeys = map[string]bool{
	"AWSTemplateFormatVersion": true, "Description": true, "Metadata": true, "Parameters": true,
	"Rules": true, "Mappings": true, "Conditions": true, "Transform": true, "Resources": true, "Outputs": true,
}

// Load reads and parses the template at path.
func Load(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	return t, nil
}

// Parse parses a YAML (or JSON) template.
func Parse(data []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, ErrNotTemplate
	}
	v, err := convert(doc.Content[0])
	if err != nil {
		return nil, err
	}
	raw, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("top level is not a mapping: %w", ErrNotTemplate)
	}
	for k := range raw {
		if !topKeys[k] {
			return nil, fmt.Errorf("section %q: %w", k, ErrNotTemplate)
		}
	}
	rs, ok := raw["Resources"].(map[string]any)
	if !ok || len(rs) == 0 {
		return nil, fmt.Errorf("no Resources: %w", ErrNotTemplate)
	}
	t := &Template{
		Parameters: map[string]map[string]any{},
		Conditions: asMap(raw["Conditions"]),
		Mappings:   asMap(raw["Mappings"]),
		Resources:  map[string]Resource{},
		Outputs:    map[string]map[string]any{},
		Raw:        raw,
	}
	for name, p := range asMap(raw["Parameters"]) {
		t.Parameters[name] = asMap(p)
	}
	for name, o := range asMap(raw["Outputs"]) {
		t.Outputs[name] = asMap(o)
	}
	for name, r := range rs {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("resource %s: not a mapping: %w", name, ErrNotTemplate)
		}
		typ, _ := m["Type"].(string)
		res := Resource{Type: typ, Properties: asMap(m["Properties"]), Attributes: map[string]any{}}
		for k, v := range m {
			if k != "Type" && k != "Properties" {
				res.Attributes[k] = v
			}
		}
		t.Resources[name] = res
	}
	return t, nil
}

// ResourceNames returns the logical ids of the resources of type typ
// ("" for all), sorted.
func (t *Template) ResourceNames(typ string) []string {
	var out []string
	for name, r := range t.Resources {
		if typ == "" || r.Type == typ {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

// intrinsic maps a short YAML tag to the long form's key.
func intrinsic(tag string) (string, bool) {
	switch tag {
	case "!Ref":
		return "Ref", true
	case "!Condition":
		return "Condition", true
	case "!Base64", "!Cidr", "!FindInMap", "!GetAtt", "!GetAZs", "!If", "!ImportValue", "!Join",
		"!Select", "!Split", "!Sub", "!Transform", "!And", "!Equals", "!Not", "!Or",
		"!ToJsonString", "!Length":
		return "Fn::" + strings.TrimPrefix(tag, "!"), true
	}
	return "", false
}

// convert turns a YAML node into the JSON-shaped tree, expanding short
// intrinsic tags.
func convert(n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode {
		return convert(n.Alias)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		key, ok := intrinsic(n.Tag)
		if !ok {
			return nil, fmt.Errorf("line %d: tag %s: %w", n.Line, n.Tag, ErrUnknownTag)
		}
		var arg any
		if n.Kind == yaml.ScalarNode {
			arg = n.Value
			if key == "Fn::GetAtt" {
				res, attr, ok := strings.Cut(n.Value, ".")
				if !ok {
					return nil, fmt.Errorf("line %d: !GetAtt %q: want Resource.Attribute", n.Line, n.Value)
				}
				arg = []any{res, attr}
			}
		} else {
			plain := *n
			plain.Tag = ""
			v, err := convert(&plain)
			if err != nil {
				return nil, err
			}
			arg = v
		}
		return map[string]any{key: arg}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", n.Content[i].Line, k)
			}
			v, err := convert(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := convert(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}
