package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Bounds of the text fields of device event data (docs/contract.md, "Field
// bounds"). Every value that reaches a DynamoDB key or an SQS message is
// bounded here, far inside DynamoDB's 2,048-byte partition key and
// 1,024-byte sort key and SQS's 262,144-byte message: a key over DynamoDB's
// limit fails every write of the subscriber that builds it, and the tenant's
// FIFO group with it.
const (
	// MaxPetTagLen bounds pet_tag (bowl.meal_finished): "" for an untagged
	// pet, else CheckTag's characters. The firmware sends tags of 1-24
	// bytes (firmware-bridge/PROTOCOL.md); an FDX-B tag is 15 digits.
	MaxPetTagLen = 64
	// MaxCodeLen bounds a named code (bowl.device_fault code as a string).
	MaxCodeLen = 64
	// MaxReasonLen bounds bowl.telemetry_dropped's reason ("disk_cap",
	// "ttl").
	MaxReasonLen = 64
	// MaxDetailLen bounds free text (bowl.device_fault detail), in bytes.
	MaxDetailLen = 512
)

// ErrInvalidField matches every *FieldError.
var ErrInvalidField = errors.New("invalid field")

// FieldError is a data field that breaks its bound. It names the field and
// the rule, never repeats the value (it may be large).
type FieldError struct {
	Field   string
	Problem string
	Rule    string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %s (%s)", e.Field, e.Problem, e.Rule)
}

// Is makes errors.Is(err, ErrInvalidField) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidField }

// CheckIdent checks an identifier field: 1 to max bytes of ValidName's
// characters (ASCII letters, digits, '_', '.', ':', '-'; the first a letter
// or digit); empty too when emptyOK.
func CheckIdent(field, s string, max int, emptyOK bool) error {
	rule := fmt.Sprintf("1-%d ASCII letters, digits, '_', '.', ':' or '-', starting with a letter or digit", max)
	if emptyOK {
		rule = "empty or " + rule
	}
	switch {
	case s == "" && emptyOK:
		return nil
	case s == "":
		return &FieldError{field, "is empty", rule}
	case len(s) > max:
		return &FieldError{field, fmt.Sprintf("is %d bytes long, more than %d", len(s), max), rule}
	case !alnum(s[0]):
		return &FieldError{field, "must start with a letter or digit", rule}
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != ':' && c != '-' {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return &FieldError{field, fmt.Sprintf("must not contain %q (at byte %d)", r, i), rule}
		}
	}
	return nil
}

// CheckTag checks a pet tag: empty (untagged), or 1 to MaxPetTagLen bytes
// of ASCII letters, digits, '.', '_', ':' or '-' (the firmware's tag
// characters, any of them first).
func CheckTag(field, s string) error {
	rule := fmt.Sprintf("empty or 1-%d ASCII letters, digits, '.', '_', ':' or '-'", MaxPetTagLen)
	if len(s) > MaxPetTagLen {
		return &FieldError{field, fmt.Sprintf("is %d bytes long, more than %d", len(s), MaxPetTagLen), rule}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != ':' && c != '-' {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return &FieldError{field, fmt.Sprintf("must not contain %q (at byte %d)", r, i), rule}
		}
	}
	return nil
}

// CheckText checks a free-text field: at most max bytes of UTF-8 without
// control characters (but tab and newline) and without the noncharacters
// U+FFFE and U+FFFF, which SQS refuses in a message body.
func CheckText(field, s string, max int) error {
	rule := fmt.Sprintf("at most %d bytes of UTF-8 text without control characters or U+FFFE/U+FFFF", max)
	if len(s) > max {
		return &FieldError{field, fmt.Sprintf("is %d bytes long, more than %d", len(s), max), rule}
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalidAt(s, i):
			return &FieldError{field, fmt.Sprintf("is not valid UTF-8 (at byte %d)", i), rule}
		case r < 0x20 && r != '\t' && r != '\n', 0x7f <= r && r <= 0x9f, r == 0xFFFE, r == 0xFFFF:
			return &FieldError{field, fmt.Sprintf("must not contain %U (at byte %d)", r, i), rule}
		}
	}
	return nil
}

// isInvalidAt reports whether the rune at byte i of s is an invalid
// encoding (not a literal U+FFFD).
func isInvalidAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}

// MaxKindLen bounds a sample's kind in bytes.
const MaxKindLen = 64

// kindRule says what CheckKind accepts, for error messages.
var kindRule = fmt.Sprintf("1-%d lowercase ASCII letters, digits or '_', starting with a letter", MaxKindLen)

// CheckKind checks a sample's kind ("weight_g"): 1 to MaxKindLen bytes of
// lowercase ASCII letters, digits and '_', the first a letter (the regular
// expression ^[a-z][a-z0-9_]{0,63}$; cloud/durable applies it to v1
// telemetry and batches alike).
func CheckKind(field, s string) error {
	switch {
	case s == "":
		return &FieldError{field, "is empty", kindRule}
	case len(s) > MaxKindLen:
		return &FieldError{field, fmt.Sprintf("is %d bytes long, more than %d", len(s), MaxKindLen), kindRule}
	case s[0] < 'a' || s[0] > 'z':
		return &FieldError{field, "must start with a lowercase letter", kindRule}
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return &FieldError{field, fmt.Sprintf("must not contain %q (at byte %d)", r, i), kindRule}
		}
	}
	return nil
}
