package confirm

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"sync"
)

// confirmPages serves the approval pages of URL-mode approvals (confirm.go)
// on the HTTP listener, at /approve/TOKEN: the page shows the call like the
// form does, and its Approve and Deny buttons POST to the same path with a
// per-page token. A page is served to loopback peers only, answers once,
// and is gone when its approval ends. The URL goes to the client, which
// shows it to the person; the model never sees it, and no MCP request can
// answer it.
type confirmPages struct {
	base string // "http://127.0.0.1:PORT"

	mu    sync.Mutex
	pages map[string]*confirmPage // by path token; guarded by mu
}

type confirmPage struct {
	token       string // the path's secret
	csrf        string // the form's secret
	url         string
	elicitation string
	view        callView
	answer      chan bool // buffered 1; one answer
}

// ServePages makes the approver offer URL-mode approvals under base, the
// loopback URL of its HTTP listener, and returns the handler of their pages
// (/approve/{token}).
func (ar *Approver) ServePages(base string) http.Handler {
	p := &confirmPages{base: base}
	ar.pages.Store(p)
	return p
}

func (cp *confirmPages) open(v callView) *confirmPage {
	p := &confirmPage{token: rand.Text() + rand.Text(), csrf: rand.Text(), elicitation: "mf-approval-" + v.ID, view: v, answer: make(chan bool, 1)}
	p.url = cp.base + "/approve/" + p.token
	cp.mu.Lock()
	if cp.pages == nil {
		cp.pages = make(map[string]*confirmPage)
	}
	cp.pages[p.token] = p
	cp.mu.Unlock()
	return p
}

func (cp *confirmPages) close(p *confirmPage) {
	cp.mu.Lock()
	delete(cp.pages, p.token)
	cp.mu.Unlock()
}

func (cp *confirmPages) get(token string) *confirmPage {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.pages[token]
}

// wait returns the person's answer on the page, or ctx's error.
func (p *confirmPage) wait(ctx context.Context) (bool, error) {
	select {
	case ok := <-p.answer:
		return ok, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

var pageTemplate = template.Must(template.New("approve").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Approve a tool call — manifold</title>
<style>body{font-family:sans-serif;max-width:50em;margin:2em auto}pre{background:#f4f4f4;padding:1em;overflow:auto}button{font-size:1.1em;margin-right:1em}</style></head>
<body><h1>Approve this tool call?</h1>
<p>Server: <b>{{.View.Server}}</b><br>Tool: <b>{{.View.Tool}}</b> ("{{.View.Original}}" on the server)</p>
{{if .View.Reason}}<p>Why approval is needed: {{.View.Reason}}</p>{{end}}
<p>Asked by: {{.View.Rule}}</p>
<p>Arguments:</p><pre>{{.View.Args}}</pre>
<p>Approval {{.View.ID}}: for this call with exactly these arguments, once, until {{.View.Expires.Format "2006-01-02 15:04:05 MST"}}.</p>
<form method="post"><input type="hidden" name="csrf" value="{{.CSRF}}">
<button name="answer" value="approve">Approve</button><button name="answer" value="deny">Deny</button></form>
</body></html>
`))

var pageDone = template.Must(template.New("done").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>manifold</title></head><body><p>{{.}}</p><p>You can close this page.</p></body></html>
`))

// ServeHTTP serves /approve/TOKEN.
func (cp *confirmPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	if !loopbackPeer(r.RemoteAddr) {
		http.Error(w, "manifold: approval pages are served to this machine only", http.StatusForbidden)
		return
	}
	p := cp.get(r.PathValue("token"))
	if p == nil {
		http.Error(w, "manifold: no approval waits at this address (it was answered, it expired, or the address is wrong)", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.Set("Content-Type", "text/html; charset=utf-8")
		_ = pageTemplate.Execute(w, struct {
			View callView
			CSRF string
		}{p.view, p.csrf})
	case http.MethodPost:
		if err := sameOrigin(r); err != nil {
			http.Error(w, "manifold: "+err.Error(), http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "manifold: the form could not be read", http.StatusBadRequest)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(p.csrf)) != 1 {
			http.Error(w, "manifold: the form's token is wrong; reload the page from the link your client showed", http.StatusForbidden)
			return
		}
		answer := r.PostFormValue("answer")
		if answer != "approve" && answer != "deny" {
			http.Error(w, "manifold: answer approve or deny", http.StatusBadRequest)
			return
		}
		cp.close(p) // one answer per page
		select {
		case p.answer <- answer == "approve":
		default:
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		msg := "Denied: the call will not run."
		if answer == "approve" {
			msg = "Approved: the call runs once."
		}
		_ = pageDone.Execute(w, msg)
	default:
		h.Set("Allow", "GET, POST")
		http.Error(w, "manifold: method not allowed", http.StatusMethodNotAllowed)
	}
}

// sameOrigin refuses a POST sent by a page of another origin: its Origin,
// when present, must be the page's own, and a browser's Sec-Fetch-Site
// must not be cross-site.
func sameOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errors.New("the form was sent from another origin")
		}
	} else if o == "null" {
		return errors.New("the form was sent from an opaque origin")
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return errors.New("the form was sent from another site")
	}
	return nil
}

// loopbackPeer reports whether addr (host:port) is a loopback address.
func loopbackPeer(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
