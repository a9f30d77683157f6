package instant

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// MaxAnswer is the largest answer the client reads: a status report is a
// few kilobytes.
const MaxAnswer = 1 << 20

// Client posts messages to the bank's instant-payments API:
// POST {BaseURL}/pacs.008 and POST {BaseURL}/pacs.028.
type Client struct {
	BaseURL string
	Auth    string       // the Authorization header, if not empty
	HTTP    *http.Client // nil: noRedirects (the timeouts are the client's own)
	// Timeout bounds one request; 0: 10 s.
	Timeout time.Duration
	// Attempts bounds the requests of one call; 0: 3.
	Attempts int
	// Backoff is the wait before the second attempt, doubled before each
	// next; 0: 250 ms.
	Backoff time.Duration
}

// HTTPError is an answer outside 2xx.
type HTTPError struct {
	StatusCode int
	Body       string // its beginning
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("the bank answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// Retryable: the bank is busy or down (5xx, 429), not refusing the message.
func (e *HTTPError) Retryable() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusTooManyRequests
}

// transportError is a request that got no answer: a timeout, a refused or
// reset connection. The message may or may not have reached the bank.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// Retryable reports whether a call's error may be retried with the same
// message: no answer, or the bank busy or down.
func Retryable(err error) bool {
	var h *HTTPError
	var t *transportError
	return errors.As(err, &t) || errors.As(err, &h) && h.Retryable()
}

// Send posts the payment's pacs.008 and reads the bank's pacs.002. With no
// answer, or a busy bank, it posts the same bytes again (same MsgId: the
// bank takes them for the message it may have had), up to Attempts times.
func (c *Client) Send(ctx context.Context, p Payment) (Status, error) {
	body, err := CreditTransfer(p)
	if err != nil {
		return Status{}, err
	}
	answer, err := c.post(ctx, "/pacs.008", body)
	if err != nil {
		return Status{}, fmt.Errorf("pacs.008 of %s: %w", p.ID, err)
	}
	return ReadStatus(answer, p.ID)
}

// Ask posts a pacs.028 about the payment and reads the bank's pacs.002.
func (c *Client) Ask(ctx context.Context, paymentID string) (Status, error) {
	body, err := StatusRequest("psr_"+strings.ToLower(rand.Text()), paymentID, time.Now())
	if err != nil {
		return Status{}, err
	}
	answer, err := c.post(ctx, "/pacs.028", body)
	if err != nil {
		return Status{}, fmt.Errorf("pacs.028 about %s: %w", paymentID, err)
	}
	return ReadStatus(answer, paymentID)
}

func (c *Client) post(ctx context.Context, path string, body []byte) ([]byte, error) {
	attempts, wait := c.Attempts, c.Backoff
	if attempts < 1 {
		attempts = 3
	}
	if wait <= 0 {
		wait = 250 * time.Millisecond
	}
	for attempt := 1; ; attempt++ {
		answer, err := c.postOnce(ctx, path, body)
		if err == nil || !Retryable(err) || ctx.Err() != nil {
			return answer, err
		}
		if attempt == attempts {
			return nil, fmt.Errorf("%d attempts: %w", attempts, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait *= 2
	}
}

func (c *Client) postOnce(ctx context.Context, path string, body []byte) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/xml")
	req.Header.Set("Accept", "application/xml")
	if c.Auth != "" {
		req.Header.Set("Authorization", c.Auth)
	}
	hc := c.HTTP
	if hc == nil {
		hc = noRedirects
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, &transportError{err}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return nil, &transportError{err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &HTTPError{StatusCode: resp.StatusCode, Body: snippet(answer)}
	}
	if len(answer) > MaxAnswer {
		return nil, fmt.Errorf("the bank's answer is over %d bytes", MaxAnswer)
	}
	return answer, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// noRedirects is the default HTTP client: a payment message goes to the
// configured address only, never where a redirect points.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
