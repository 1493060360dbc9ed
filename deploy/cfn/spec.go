package cfn

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// SpecRelPath is where deploy/cfn-spec's `npm ci` puts the specification,
// relative to the repository root.
const SpecRelPath = "deploy/cfn-spec/node_modules/@aws-cdk/aws-service-spec/db.json.gz"

// SpecInstallHint is the command that installs the specification.
const SpecInstallHint = "cd deploy/cfn-spec && npm ci (scripts/setup does it)"

// Spec is the part of the CloudFormation resource specification the checks
// use: every resource type with its properties and attributes, and the
// property types they reference.
type Spec struct {
	Resources map[string]*ResourceSpec
	types     map[string]*StructSpec
}

// ResourceSpec describes one resource type, e.g. AWS::SQS::Queue.
type ResourceSpec struct {
	Type       string
	Properties map[string]PropertySpec
	// Attributes are the names Fn::GetAtt accepts.
	Attributes map[string]bool
}

// StructSpec is a property type (a nested object).
type StructSpec struct {
	Name       string
	Properties map[string]PropertySpec
}

// PropertySpec is one property of a resource or a property type.
type PropertySpec struct {
	Type     TypeSpec `json:"type"`
	Required bool     `json:"required"`
}

// TypeSpec is a property's type: Kind is string, number, integer, boolean,
// json, tag, date-time, ref (a StructSpec, by Ref id), array or map (of
// Element), or union (of Types).
type TypeSpec struct {
	Kind      string `json:"type"`
	Reference *struct {
		ID string `json:"$ref"`
	} `json:"reference"`
	Element *TypeSpec  `json:"element"`
	Types   []TypeSpec `json:"types"`
}

// Struct returns the property type a ref TypeSpec points to.
func (s *Spec) Struct(t TypeSpec) (*StructSpec, bool) {
	if t.Reference == nil {
		return nil, false
	}
	st, ok := s.types[t.Reference.ID]
	return st, ok
}

// rawSpec is the layout of db.json.
type rawSpec struct {
	Schema struct {
		Resource struct {
			Entities []struct {
				Type       string                     `json:"cloudFormationType"`
				Properties map[string]PropertySpec    `json:"properties"`
				Attributes map[string]json.RawMessage `json:"attributes"`
			} `json:"entities"`
		} `json:"resource"`
		TypeDefinition struct {
			Entities []struct {
				ID         string                  `json:"$id"`
				Name       string                  `json:"name"`
				Properties map[string]PropertySpec `json:"properties"`
			} `json:"entities"`
		} `json:"typeDefinition"`
	} `json:"schema"`
}

// LoadSpec reads a db.json.gz.
func LoadSpec(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: %w (install: %s)", path, ErrSpecMissing, SpecInstallHint)
		}
		return nil, fmt.Errorf("open spec: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("spec %s: %w", path, err)
	}
	var raw rawSpec
	if err := json.NewDecoder(zr).Decode(&raw); err != nil {
		return nil, fmt.Errorf("spec %s: decode: %w", path, err)
	}
	s := &Spec{Resources: map[string]*ResourceSpec{}, types: map[string]*StructSpec{}}
	for _, e := range raw.Schema.Resource.Entities {
		rs := &ResourceSpec{Type: e.Type, Properties: e.Properties, Attributes: map[string]bool{}}
		for a := range e.Attributes {
			rs.Attributes[a] = true
		}
		s.Resources[e.Type] = rs
	}
	for _, e := range raw.Schema.TypeDefinition.Entities {
		s.types[e.ID] = &StructSpec{Name: e.Name, Properties: e.Properties}
	}
	if len(s.Resources) == 0 {
		return nil, fmt.Errorf("spec %s: no resource types", path)
	}
	return s, nil
}

// RepoRoot finds the repository root: $BOWLINE_ROOT, or the nearest parent of
// the working directory holding go.mod.
func RepoRoot() (string, error) {
	if r := os.Getenv("BOWLINE_ROOT"); r != "" {
		return r, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}
