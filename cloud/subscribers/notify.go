package subscribers

import (
	"context"
	"encoding/json"
	"html"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/engine"
)

// notifyOwner returns the handler of one of the owner subscriptions: it
// tells the tenant's owner, through the directory's contact, what the event
// says. The template is the event type; the data is its payload.
func (s *Set) notifyOwner(subscription string) engine.Handler {
	return func(ctx context.Context, env engine.Envelope) error {
		c, err := s.contacts.Owner(ctx, env.Tenant)
		if err != nil {
			return err
		}
		return classify(s.cfg.Notify.Send(ctx, adapters.Key(env.ID, subscription), adapters.Notification{
			Tenant: env.Tenant, To: c.Address, Channel: c.Channel, Template: env.Type, Data: env.Payload,
		}))
	}
}

// notifySupport tells support about a device fault, at most once per bowl
// per SupportWindow: the first fault of a window is e-mailed with the
// number of the bowl's faults coalesced since its last e-mail
// ("coalesced_faults"), the others are only counted (openSupportWindow).
// Every value of the payload is device-controlled, so it is bounded and
// escaped first (supportText).
func (s *Set) notifySupport(ctx context.Context, env engine.Envelope) error {
	send, coalesced, err := s.openSupportWindow(ctx, env)
	if err != nil {
		return err
	}
	if !send {
		s.log.Info("device fault coalesced into the bowl's open support window", "tenant", env.Tenant, "bowl", faultSource(env), "event_id", env.ID)
		return nil
	}
	data := map[string]any{"tenant": env.Tenant, "actor": env.Actor}
	for k, v := range env.Payload {
		data[k] = supportValue(k, v, data)
	}
	data["coalesced_faults"] = coalesced
	data["window_seconds"] = int64(s.cfg.SupportWindow / time.Second)
	return classify(s.cfg.Notify.Send(ctx, adapters.Key(env.ID, catalog.SubNotifySupport), adapters.Notification{
		Tenant: env.Tenant, To: s.cfg.SupportAddress, Channel: "email", Template: env.Type, Data: data,
	}))
}

// MaxSupportText bounds each device-supplied text in a support email, in
// characters; a longer one is cut and marked (docs/security.md).
const MaxSupportText = 1000

// truncatedMark ends a cut text.
const truncatedMark = " [truncated]"

// supportValue returns v fit for a support email: numbers and booleans as
// they are, anything else as bounded, escaped text (supportText). A cut
// value sets data["<k>_truncated"] and data["<k>_bytes"].
func supportValue(k string, v any, data map[string]any) any {
	switch x := v.(type) {
	case nil, bool, float64, int, int64:
		return x
	case string:
		text, cut := supportText(x)
		if cut {
			data[k+"_truncated"], data[k+"_bytes"] = true, len(x)
		}
		return text
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "(unprintable)"
		}
		text, cut := supportText(string(b))
		if cut {
			data[k+"_truncated"], data[k+"_bytes"] = true, len(b)
		}
		return text
	}
}

// supportText bounds s to MaxSupportText characters (marking a cut) and
// escapes it: control characters (CR and LF included, so the text can
// never start a mail header) become spaces, invalid UTF-8 becomes U+FFFD,
// and the HTML metacharacters < > & ' " become entities, so the text is
// inert in a plain-text or an HTML body and in a subject line.
func supportText(s string) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	cut := utf8.RuneCountInString(s) > MaxSupportText
	if cut {
		n := 0
		for i := range s {
			if n == MaxSupportText {
				s = s[:i]
				break
			}
			n++
		}
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = html.EscapeString(s)
	if cut {
		s += truncatedMark
	}
	return s, cut
}
