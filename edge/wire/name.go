package wire

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest name in bytes.
const MaxNameLen = 128

// nameRule says what ValidName accepts, for error messages.
const nameRule = "a name is 1-128 ASCII letters, digits, '_', '.', ':' or '-', starting with a letter or digit"

// ErrInvalidName matches every *NameError.
var ErrInvalidName = errors.New("invalid name")

// ValidName reports whether s can be a tenant, a thing or an event id: 1 to
// 128 ASCII letters, digits, '_', '.', ':' or '-', the first a letter or a
// digit (the regular expression ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$).
//
// It is the rule of the cloud: the engine's for tenants (engine.ValidTenant),
// which ingest applies to every name, so a name that passes here is one
// topic segment without wildcards or '/', and "<thing>/<id>" is unambiguous.
// The gateway refuses at config load any tenant or thing that fails it.
func ValidName(s string) bool { return nameProblem(s) == "" }

// CheckName returns a *NameError naming field when name is not ValidName.
func CheckName(field, name string) error {
	if p := nameProblem(name); p != "" {
		return &NameError{Field: field, Name: name, Problem: p}
	}
	return nil
}

// ThingSeparator joins a gateway's name and one of its bowls' in a thing
// name ("gw-1:kitchen"). The gateway IoT policy lets a gateway publish for
// "<its name>:*" (deploy/cloudformation/bowline.yaml), so a gateway whose
// own name held it would fall under another gateway's namespace.
const ThingSeparator = ':'

// CheckGatewayName is CheckName with one more rule: a gateway's name holds
// no ThingSeparator, so no gateway's name begins with "<another
// gateway>:", the prefix that gateway may publish under (docs/security.md).
func CheckGatewayName(field, name string) error {
	if err := CheckName(field, name); err != nil {
		return err
	}
	if i := strings.IndexByte(name, ThingSeparator); i >= 0 {
		return &NameError{Field: field, Name: name, Problem: fmt.Sprintf("must not contain %q (at byte %d): it separates a gateway from its bowls", ThingSeparator, i)}
	}
	return nil
}

// NameError is a tenant, thing or event id that breaks ValidName. It matches
// ErrInvalidName.
type NameError struct {
	// Field is what the name is for: "tenant", "thing", "client_id", ...
	Field string
	// Name is the value at fault.
	Name string
	// Problem says what is wrong with it, e.g. "must start with a letter or
	// digit".
	Problem string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("%s %q: %s (%s)", e.Field, e.Name, e.Problem, nameRule)
}

// Is makes errors.Is(err, ErrInvalidName) true.
func (e *NameError) Is(target error) bool { return target == ErrInvalidName }

func nameProblem(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > MaxNameLen:
		return fmt.Sprintf("is %d bytes long, more than %d", len(s), MaxNameLen)
	case !alnum(s[0]):
		return "must start with a letter or digit"
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != ':' && c != '-' {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return fmt.Sprintf("must not contain %q (at byte %d)", r, i)
		}
	}
	return ""
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
