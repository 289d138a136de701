package streamable

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// AnswerRelay carries a legacy HTTP client's answer to a server→client
// request (elicitation, sampling, roots) to the replica that asked it, when
// the answer reaches another (README "Several replicas"). Each replica tags
// the ids of the requests it writes to a legacy session with its name
// (wire.TagRequests); a replica that receives an answer naming another
// publishes it, and the replica named injects it into its copy of the session.
// Implementations must be safe for concurrent use and authenticate what they
// carry. If the proxy has none (its Options.Answers is nil), ids are written
// and read unchanged.
type AnswerRelay interface {
	// Replica names this replica: lowercase letters and digits, at most 64,
	// different for every process.
	Replica() string
	// PublishAnswer hands msg, the answer of session's client with its id
	// restored, to replica. It returns an error wrapping
	// ErrSharedUnavailable when the relay cannot be reached, and
	// ErrNoReplica when no replica of that name listens.
	PublishAnswer(ctx context.Context, replica, session string, msg []byte) error
	// ListenAnswers calls deliver with each answer published to this
	// replica that it could authenticate, one at a time, until ctx ends;
	// it returns then. It reconnects by itself while the relay is down.
	ListenAnswers(ctx context.Context, deliver func(session string, msg []byte))
}

// ErrNoReplica means an answer was published for a replica that does not
// listen: it stopped (its calls ended with it) or is reconnecting.
var ErrNoReplica = errors.New("no replica of that name listens")

// answerTimeout bounds publishing an answer and injecting one.
const answerTimeout = 5 * time.Second

// startAnswers makes m the endpoint that receives the answers published to
// this replica, and starts listening for them (once per proxy, which owns
// the listener: it ends when the proxy closes).
func (m *mcpEndpoint) startAnswers() {
	m.core.ListenAnswers(m.injectAnswer)
}

// relayAnswers sorts a legacy session's POST body (readBody held it):
// answers to requests of this replica get their ids back, answers to
// requests of another are published to it. It reports true when it has
// answered the request: every message went to other replicas (202, as the
// SDK answers a POST of responses), or one could not be relayed (503).
func (m *mcpEndpoint) relayAnswers(w http.ResponseWriter, r *http.Request, session string) bool {
	hb, ok := r.Body.(*heldBody)
	relay := m.core.Answers()
	if !ok || relay == nil {
		return false
	}
	rest, others := wire.RouteAnswers(hb.data, relay.Replica())
	for _, a := range others {
		ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
		err := relay.PublishAnswer(ctx, a.Replica, session, a.Msg)
		cancel()
		if err == nil {
			continue
		}
		w.Header().Set("Retry-After", "1")
		if errors.Is(err, ErrNoReplica) {
			writeHTTPError(w, http.StatusServiceUnavailable, codeServerError, "manifold: the replica that asked this question does not listen (it is reconnecting to the shared store, or it stopped, and its call ended with it); retry shortly", nil)
			return true
		}
		if m.answersDown.CompareAndSwap(false, true) {
			m.core.Log().Warn("an answer to a question of another replica could not be relayed: the shared store ([cluster] redis) cannot be reached; such answers are refused with 503 until it is back", "err", err)
		}
		writeHTTPError(w, http.StatusServiceUnavailable, codeServerError, "manifold: this answer belongs to a question of another replica, and the shared store ([cluster] redis) that carries it there cannot be reached; retry shortly", nil)
		return true
	}
	if len(others) > 0 {
		m.answersDown.Store(false)
	}
	if rest == nil {
		hb.release()
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	if !wire.SameBytes(rest, hb.data) {
		hb.data, hb.off = rest, 0
		r.ContentLength = int64(len(rest))
	}
	return false
}

// injectAnswer serves msg, an answer that another replica received for
// session, to this replica's copy of session, as a POST of its client: the
// owner check was made by the replica that received it, and the relay
// authenticated it. Anything but one answer, or one for a session this
// replica does not hold, is dropped.
func (m *mcpEndpoint) injectAnswer(session string, msg []byte) {
	if int64(len(msg)) > m.opts.MaxRequestBytes || !wire.IsAnswer(msg) {
		m.core.Log().Warn("dropped a relayed answer that is not one JSON-RPC response within http.max_body_bytes")
		return
	}
	h := m.sessions
	h.mu.Lock()
	e := h.byID[session]
	h.mu.Unlock()
	if e == nil {
		m.core.Log().Info("dropped a relayed answer for a session this replica no longer holds (it ended or was closed idle)")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.core.Life()), answerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(msg))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	w := &injectWriter{header: http.Header{}}
	switch {
	case e.tr != nil:
		e.tr.ServeHTTP(w, req)
	case e.owner.User != "":
		// The SDK's handler checks the session's user on the context (the
		// TokenInfo's UserID it was created with), which only its
		// middleware can set.
		user := &auth.TokenInfo{UserID: e.owner.User, Expiration: time.Now().Add(answerTimeout)}
		auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return user, nil
		}, nil)(m.sdk).ServeHTTP(w, withBearer(req))
	default:
		m.sdk.ServeHTTP(w, req)
	}
	if w.code != http.StatusAccepted {
		m.core.Log().Warn("a relayed answer was not accepted by its session", "status", w.code)
	}
}

// withBearer gives req a placeholder bearer token, for RequireBearerToken
// around an injected answer (the verifier ignores it).
func withBearer(req *http.Request) *http.Request {
	req.Header.Set("Authorization", "Bearer relayed")
	return req
}

// injectWriter is the response of an injected answer: only its status
// matters.
type injectWriter struct {
	header http.Header
	code   int
}

func (w *injectWriter) Header() http.Header { return w.header }

func (w *injectWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *injectWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// tagWriter tags the ids of the server→client requests that the SDK writes
// to a legacy session's responses (wire.TagRequests), so that an answer that
// reaches another replica finds its way back here.
type tagWriter struct {
	http.ResponseWriter
	replica string
}

// tagIDs returns w, wrapped to tag request ids when replicas relay answers.
func (m *mcpEndpoint) tagIDs(w http.ResponseWriter) http.ResponseWriter {
	relay := m.core.Answers()
	if relay == nil {
		return w
	}
	return &tagWriter{ResponseWriter: w, replica: relay.Replica()}
}

func (tw *tagWriter) Write(p []byte) (int, error) {
	out := wire.TagRequests(p, tw.replica)
	if wire.SameBytes(out, p) {
		return tw.ResponseWriter.Write(p)
	}
	if _, err := tw.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (tw *tagWriter) WriteHeader(code int) { tw.ResponseWriter.WriteHeader(code) }

func (tw *tagWriter) Flush() { _ = http.NewResponseController(tw.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (tw *tagWriter) Unwrap() http.ResponseWriter { return tw.ResponseWriter }
