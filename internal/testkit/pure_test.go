package testkit_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"
)

type pureConfig struct {
	Name  string
	Wait  time.Duration
	Now   func() time.Time
	Tags  []string
	inner struct{ n int }
}

func (c pureConfig) Validate() error {
	if c.Name == "" {
		return errors.New("Name is empty")
	}
	return nil
}

type fillingConfig struct {
	Wait time.Duration
	Now  func() time.Time
	Sub  struct{ Limit int }
}

func (c *fillingConfig) Validate() error {
	if c.Wait == 0 {
		c.Wait = time.Second
	}
	return nil
}

type nowFillingConfig struct{ fillingConfig }

func (c *nowFillingConfig) Validate() error {
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

type subFillingConfig struct{ fillingConfig }

func (c *subFillingConfig) Validate() error {
	c.Sub.Limit = 3
	return nil
}

// recordTB keeps what ValidateKeeps reports instead of failing the test.
type recordTB struct {
	testing.TB
	errs []string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestValidateKeepsPassesAPureValidate(t *testing.T) {
	r := &recordTB{TB: t}
	c := pureConfig{Name: "x", Now: time.Now, Tags: []string{"a"}}
	if err := testkit.ValidateKeeps(r, c); err != nil {
		t.Errorf("ValidateKeeps returned %v; want Validate's nil", err)
	}
	if err := testkit.ValidateKeeps(r, pureConfig{}); err == nil {
		t.Error("ValidateKeeps(empty) = nil; want Validate's error")
	}
	if len(r.errs) != 0 {
		t.Errorf("ValidateKeeps reported %q; want nothing", r.errs)
	}
}

func TestValidateKeepsCatchesAFilledDefault(t *testing.T) {
	for name, check := range map[string]func(testing.TB) error{
		"duration": func(tb testing.TB) error { return testkit.ValidateKeeps(tb, fillingConfig{}) },
		"func":     func(tb testing.TB) error { return testkit.ValidateKeeps(tb, nowFillingConfig{}) },
		"nested":   func(tb testing.TB) error { return testkit.ValidateKeeps(tb, subFillingConfig{}) },
	} {
		r := &recordTB{TB: t}
		_ = check(r)
		if len(r.errs) != 1 {
			t.Errorf("%s: ValidateKeeps reported %q; want one change", name, r.errs)
		}
	}
}
