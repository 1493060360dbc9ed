package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/cloud/guard"
)

// CookieName is the session cookie.
const CookieName = "bowline_console"

// CSRFField is the form field (and CSRFHeader the header) carrying the
// session's CSRF token on every POST.
const (
	CSRFField  = "csrf"
	CSRFHeader = "X-CSRF-Token"
)

// session is one operator's login.
type session struct {
	csrf    string
	expires time.Time
}

// sessions are the logins of this process, by cookie value.
type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[string]session
}

func randToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *sessions) create() (id string, sess session) {
	id, sess = randToken(), session{csrf: randToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m { // forget expired logins
		if now.After(v.expires) {
			delete(s.m, k)
		}
	}
	s.m[id] = sess
	return id, sess
}

func (s *sessions) get(id string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[id]
	if !ok || s.now().After(sess.expires) {
		delete(s.m, id)
		return session{}, false
	}
	return sess, true
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// tokenOK compares a presented token with the ops token in constant time,
// through their SHA-256 digests: comparing the tokens themselves would
// return at once when the lengths differ and so tell the token's length.
func (c *Console) tokenOK(tok string) bool {
	got, want := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(c.cfg.OpsToken))
	return tok != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// sessionOf returns the request's session.
func (c *Console) sessionOf(r *http.Request) (string, session, bool) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return "", session{}, false
	}
	sess, ok := c.sessions.get(ck.Value)
	return ck.Value, sess, ok
}

// sameOrigin refuses a request whose Origin (when the browser sends one)
// is not this host: a second line behind the CSRF token.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// login serves GET /console/login: the form, or with ?token= the one-click
// login `bowline dev` prints (Config.OneClickLogin; elsewhere the token is
// not even looked at).
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !c.cfg.OneClickLogin {
			c.render(w, r, http.StatusBadRequest, "login", page{Title: "Log in", Error: "One-click login (?token=) is only in bowline dev: log in with the form."})
			return
		}
		c.finishLogin(w, r, tok)
		return
	}
	c.render(w, r, http.StatusOK, "login", page{Title: "Log in", Data: nextPage(r.URL.Query().Get("next"))})
}

// nextPage is where a login goes on: the console page asked for when it
// is one (a path under Prefix, no host, no scheme), else the pipeline.
func nextPage(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil ||
		!strings.HasPrefix(u.Path, Prefix) || strings.ContainsAny(next, "\\\r\n") || strings.HasPrefix(next, "//") ||
		u.Path == Prefix+"login" || u.Path == Prefix+"logout" {
		return Prefix
	}
	u.RawQuery = stripLive(u.Query()).Encode()
	return u.RequestURI()
}

// stripLive drops the live-region parameter: a login goes on to the
// whole page.
func stripLive(q url.Values) url.Values { q.Del("live"); return q }

// loginPost serves POST /console/login.
func (c *Console) loginPost(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		c.forbidden(w, r, "cross-origin login refused")
		return
	}
	c.finishLogin(w, r, r.PostFormValue("token"))
}

func (c *Console) finishLogin(w http.ResponseWriter, r *http.Request, tok string) {
	at, wait, ok := c.cfg.Guard.Check(r, guard.KindConsole)
	if !ok {
		guard.Refuse(w, wait)
		c.render(w, r, http.StatusTooManyRequests, "login", page{Title: "Log in", Error: "Too many wrong tokens from this address: try again later.", Data: nextPage(r.FormValue("next"))})
		return
	}
	if !c.tokenOK(tok) {
		c.cfg.Guard.Failed(at)
		c.render(w, r, http.StatusUnauthorized, "login", page{Title: "Log in", Error: "That is not the ops token (BOWLINE_OPS_TOKEN) of this API.", Data: nextPage(r.FormValue("next"))})
		return
	}
	id, _ := c.sessions.create()
	// Secure whenever the browser used HTTPS, also when TLS ends at the
	// load balancer (X-Forwarded-Proto from the trusted proxy only).
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: Prefix, HttpOnly: true, Secure: c.cfg.Guard.HTTPS(r),
		SameSite: http.SameSiteStrictMode, MaxAge: int(c.cfg.SessionTTL / time.Second),
	})
	// The redirect drops the token from the address bar and history, and
	// goes on to the page asked for.
	http.Redirect(w, r, nextPage(r.FormValue("next")), http.StatusSeeOther)
}

// logout serves POST /console/logout.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if id, _, ok := c.sessionOf(r); ok {
		c.sessions.drop(id)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, HttpOnly: true, Secure: c.cfg.Guard.HTTPS(r), SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// authed wraps a page or action: no session means the login page (GET) or
// 403 (anything else); a POST also needs the CSRF token and a same-origin
// Origin.
func (c *Console) authed(h func(w http.ResponseWriter, r *http.Request, sess session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, sess, ok := c.sessionOf(r)
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				to := Prefix + "login"
				if next := nextPage(r.URL.RequestURI()); next != Prefix {
					to += "?next=" + url.QueryEscape(next)
				}
				http.Redirect(w, r, to, http.StatusSeeOther)
				return
			}
			c.forbidden(w, r, "not logged in")
			return
		}
		if r.Method == http.MethodPost {
			tok := r.Header.Get(CSRFHeader)
			if tok == "" {
				tok = r.PostFormValue(CSRFField)
			}
			if !sameOrigin(r) || subtle.ConstantTimeCompare([]byte(tok), []byte(sess.csrf)) != 1 {
				c.forbidden(w, r, "missing or wrong CSRF token: reload the page and try again")
				return
			}
		}
		h(w, r, sess)
	}
}
