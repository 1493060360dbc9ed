package cfn

import "testing"

func TestTemplateMatchesSpecification(t *testing.T) {
	s := resourceSpec(t)
	tpl := stackTemplate(t)
	for _, p := range Check(tpl, s) {
		t.Errorf("%s", p)
	}
}
