package wire

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// nameRegexp is the rule as the engine writes it for tenants.
var nameRegexp = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

func TestGoldenNames(t *testing.T) {
	g := loadGolden(t)
	for _, n := range g.Names {
		if got := ValidName(n.Name); got != n.Valid {
			t.Errorf("ValidName(%q) = %t; want %t", n.Name, got, n.Valid)
		}
		err := CheckName("tenant", n.Name)
		if n.Valid {
			if err != nil {
				t.Errorf("CheckName(tenant, %q) = %v; want nil", n.Name, err)
			}
			continue
		}
		var ne *NameError
		if !errors.As(err, &ne) || !errors.Is(err, ErrInvalidName) || ne.Problem != n.Problem {
			t.Errorf("CheckName(tenant, %q) = %v; want a NameError with problem %q", n.Name, err, n.Problem)
			continue
		}
		if want := `tenant "` + n.Name + `": ` + n.Problem; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("CheckName(tenant, %q) = %q; want it to start with %q", n.Name, err, want)
		}
	}
}

func FuzzValidNameMatchesTheRegexp(f *testing.F) {
	for _, n := range loadGolden(f).Names {
		f.Add(n.Name)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidName(s), nameRegexp.MatchString(s); got != want {
			t.Fatalf("ValidName(%q) = %t; want %t (the regexp)", s, got, want)
		}
	})
}
