package cfn

import (
	"errors"
	"reflect"
	"testing"
)

// TestParseShortTags pins how each short intrinsic tag expands.
func TestParseShortTags(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want any
	}{
		{`!Ref X`, map[string]any{"Ref": "X"}},
		{`!GetAtt Q.Arn`, map[string]any{"Fn::GetAtt": []any{"Q", "Arn"}}},
		{`!GetAtt Db.Endpoint.Address`, map[string]any{"Fn::GetAtt": []any{"Db", "Endpoint.Address"}}},
		{`!GetAtt [Q, Arn]`, map[string]any{"Fn::GetAtt": []any{"Q", "Arn"}}},
		{`!Sub "${A}-x"`, map[string]any{"Fn::Sub": "${A}-x"}},
		{`!Sub ["${a}", {a: !Ref B}]`, map[string]any{"Fn::Sub": []any{"${a}", map[string]any{"a": map[string]any{"Ref": "B"}}}}},
		{`!If [C, 1, !Ref AWS::NoValue]`, map[string]any{"Fn::If": []any{"C", 1, map[string]any{"Ref": "AWS::NoValue"}}}},
		{`!Not [!Equals [!Ref P, ""]]`, map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "P"}, ""}}}}},
		{`!Select [0, !Ref L]`, map[string]any{"Fn::Select": []any{0, map[string]any{"Ref": "L"}}}},
		{`!Join [",", [a, b]]`, map[string]any{"Fn::Join": []any{",", []any{"a", "b"}}}},
		{`!Condition C`, map[string]any{"Condition": "C"}},
		{`{"Fn::GetAtt": ["Q", "Arn"]}`, map[string]any{"Fn::GetAtt": []any{"Q", "Arn"}}},
		{`"<$.dynamodb.NewImage>"`, "<$.dynamodb.NewImage>"},
		{`-1`, -1},
		{`"true"`, "true"},
		{`true`, true},
	} {
		tpl, err := Parse([]byte("Resources:\n  R:\n    Type: T\n    Properties:\n      V: " + tc.yaml + "\n"))
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.yaml, err)
			continue
		}
		if got := tpl.Resources["R"].Properties["V"]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%s) = %#v; want %#v", tc.yaml, got, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want error
	}{
		{"Resources:\n  R: {Type: T, Properties: {V: !Reff X}}\n", ErrUnknownTag},
		{"Description: no resources\n", ErrNotTemplate},
		{"Resource:\n  R: {Type: T}\n", ErrNotTemplate},
		{"- a\n", ErrNotTemplate},
	} {
		if _, err := Parse([]byte(tc.yaml)); !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q) error = %v; want %v", tc.yaml, err, tc.want)
		}
	}
	if _, err := Parse([]byte("Resources:\n  R: {Type: T}\n  R: {Type: U}\n")); err == nil {
		t.Errorf("Parse(duplicate key) error = nil; want an error")
	}
}

func TestParseSub(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []SubPart
	}{
		{"plain", []SubPart{{Literal: true, Text: "plain"}}},
		{"${A}-bowline-${B.Arn}", []SubPart{{Text: "A"}, {Literal: true, Text: "-bowline-"}, {Text: "B.Arn"}}},
		{"x/${!iot:Connection.Thing.ThingName}/y", []SubPart{{Literal: true, Text: "x/${iot:Connection.Thing.ThingName}/y"}}},
		{"", nil},
	} {
		got, err := ParseSub(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSub(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"${A", "${}"} {
		if _, err := ParseSub(bad); err == nil {
			t.Errorf("ParseSub(%q) error = nil; want an error", bad)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"TENANT#*#EVENT", "TENANT#t1#EVENT", true},
		{"TENANT#*#EVENT", "TENANT#t1#HEAD", false},
		{"TENANT#*#EVENT", "TENANT#a#EVENT#x", false},
		{"a/*", "a/b/c", true},
		{"a/?", "a/bc", false},
		{"topic/dt/+/x", "topic/dt/t1/x", false},
		{"topic/dt/+/x", "topic/dt/+/x", true},
		{"*", "", true},
		{"", "x", false},
	} {
		if got := MatchGlob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v; want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}
