package wire

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestCheckIdentAndText(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		problem string // "" when valid
	}{
		{"tag ok", CheckTag("pet_tag", "900215012345678"), ""},
		{"tag empty ok", CheckTag("pet_tag", ""), ""},
		{"tag 64", CheckTag("pet_tag", strings.Repeat("a", 64)), ""},
		{"tag 65", CheckTag("pet_tag", strings.Repeat("a", 65)), "is 65 bytes long, more than 64"},
		{"tag 3000", CheckTag("pet_tag", strings.Repeat("9", 3000)), "is 3000 bytes long, more than 64"},
		{"tag slash", CheckTag("pet_tag", "a/b"), `must not contain '/' (at byte 1)`},
		{"tag hash", CheckTag("pet_tag", "a#b"), `must not contain '#' (at byte 1)`},
		{"tag firmware chars", CheckTag("pet_tag", "._:-Ab9"), ""},
		{"tag space", CheckTag("pet_tag", " 1"), `must not contain ' ' (at byte 0)`},
		{"code first char", CheckIdent("code", "_E1", MaxCodeLen, false), "must start with a letter or digit"},
		{"reason empty", CheckIdent("reason", "", MaxReasonLen, false), "is empty"},
		{"detail ok", CheckText("detail", "ring overflow\tat 0x3f\nretry é 😀", MaxDetailLen), ""},
		{"detail 512", CheckText("detail", strings.Repeat("x", 512), MaxDetailLen), ""},
		{"detail 513", CheckText("detail", strings.Repeat("x", 513), MaxDetailLen), "is 513 bytes long, more than 512"},
		{"detail U+FFFE", CheckText("detail", "a\uFFFEb", MaxDetailLen), "must not contain U+FFFE (at byte 1)"},
		{"detail U+FFFF", CheckText("detail", "\uFFFF", MaxDetailLen), "must not contain U+FFFF (at byte 0)"},
		{"detail NUL", CheckText("detail", "a\x00", MaxDetailLen), "must not contain U+0000 (at byte 1)"},
		{"detail CR", CheckText("detail", "a\rb", MaxDetailLen), "must not contain U+000D (at byte 1)"},
		{"detail C1", CheckText("detail", "a\u0085", MaxDetailLen), "must not contain U+0085 (at byte 1)"},
		{"detail bad utf-8", CheckText("detail", "a\xffb", MaxDetailLen), "is not valid UTF-8 (at byte 1)"},
		{"detail literal U+FFFD", CheckText("detail", "\uFFFD", MaxDetailLen), ""},
	} {
		switch {
		case c.problem == "" && c.err != nil:
			t.Errorf("%s: %v; want valid", c.name, c.err)
		case c.problem != "" && (!errors.Is(c.err, ErrInvalidField) || !strings.Contains(c.err.Error(), c.problem)):
			t.Errorf("%s: %v; want an invalid field saying %q", c.name, c.err, c.problem)
		}
	}
	err := CheckTag("pet_tag", strings.Repeat("9", 3000))
	if s := err.Error(); !strings.HasPrefix(s, "pet_tag ") || strings.Contains(s, strings.Repeat("9", 100)) {
		t.Errorf("error %q; want it to name the field and not repeat the value", s)
	}
}

// TestCheckKindIsIngestsRule holds CheckKind to the regular expression of
// its comment on names at and around every boundary.
func TestCheckKindIsIngestsRule(t *testing.T) {
	re := regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	for _, s := range []string{"weight_g", "a", "a9_", "", "_a", "9a", "Weight", "weight-g", "wéight", "a b",
		strings.Repeat("a", 64), strings.Repeat("a", 65), "temperature_c", "z", "a\x00"} {
		err := CheckKind("kind", s)
		if (err == nil) != re.MatchString(s) {
			t.Errorf("CheckKind(%q) = %v; want valid %v", s, err, re.MatchString(s))
		}
		if err != nil && !errors.Is(err, ErrInvalidField) {
			t.Errorf("CheckKind(%q) = %v; want it to match ErrInvalidField", s, err)
		}
	}
}
