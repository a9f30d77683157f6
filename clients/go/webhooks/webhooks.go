// Package webhooks verifies the signatures of the Treasury API's webhook
// deliveries (the Standard Webhooks scheme).
//
// Every delivery is a POST whose body is the event, with the headers
// webhook-id (the delivery's id, the same on every attempt), webhook-timestamp
// (Unix seconds of the attempt) and webhook-signature: space-separated
// "v1,<base64>" entries, each base64(HMAC-SHA256(secret, id + "." + timestamp
// + "." + body)) with the secret's bytes being the base64 after "whsec_".
// During a secret rotation a delivery carries a signature by each secret.
//
//	func handler(w http.ResponseWriter, r *http.Request) {
//		body, _ := io.ReadAll(r.Body)
//		event, err := webhooks.Verify(body, r.Header, secret)
//		if err != nil {
//			http.Error(w, "bad signature", http.StatusBadRequest)
//			return
//		}
//		// event.Type, event.Data.Object…
//	}
package webhooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opentreasury/treasury/clients/go/api"
)

// Tolerance is how far a delivery's timestamp may be from now, either way.
const Tolerance = 5 * time.Minute

// The reasons Verify fails, for errors.Is; every error Verify returns is
// ErrVerification too.
var (
	ErrVerification     = errors.New("webhooks: verification failed")
	ErrMissingHeader    = fmt.Errorf("%w: missing webhook-id, webhook-timestamp or webhook-signature header", ErrVerification)
	ErrInvalidTimestamp = fmt.Errorf("%w: webhook-timestamp is not a Unix time", ErrVerification)
	ErrTimestampTooOld  = fmt.Errorf("%w: webhook-timestamp is older than the tolerance", ErrVerification)
	ErrTimestampTooNew  = fmt.Errorf("%w: webhook-timestamp is further in the future than the tolerance", ErrVerification)
	ErrInvalidSecret    = fmt.Errorf("%w: the secret is not whsec_ followed by base64", ErrVerification)
	ErrNoMatch          = fmt.Errorf("%w: no signature matches", ErrVerification)
	ErrInvalidPayload   = fmt.Errorf("%w: the body is not an event", ErrVerification)
)

// Verify checks a delivery's signature against secret (the endpoint's
// "whsec_…"; during a rotation, either secret matches the signature made with
// it) and its timestamp against a 5-minute tolerance, with a constant-time
// comparison, and returns the event parsed from rawBody, the body exactly as
// received. headers are the request's headers (http.Header, any case).
func Verify(rawBody []byte, headers http.Header, secret string) (*api.Event, error) {
	return VerifyAt(rawBody, headers, secret, time.Now(), Tolerance)
}

// VerifyAt is Verify at a given instant and with a given tolerance.
func VerifyAt(rawBody []byte, headers http.Header, secret string, now time.Time, tolerance time.Duration) (*api.Event, error) {
	id := headers.Get("webhook-id")
	ts := headers.Get("webhook-timestamp")
	sigs := headers.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return nil, ErrMissingHeader
	}
	unix, err := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
	if err != nil {
		return nil, ErrInvalidTimestamp
	}
	sent := time.Unix(unix, 0)
	if now.Sub(sent) > tolerance {
		return nil, ErrTimestampTooOld
	}
	if sent.Sub(now) > tolerance {
		return nil, ErrTimestampTooNew
	}
	key, err := secretBytes(secret)
	if err != nil {
		return nil, err
	}
	expected := sign(key, id, ts, rawBody)
	matched := false
	for _, entry := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, expected) {
			matched = true // no early exit: every entry is compared
		}
	}
	if !matched {
		return nil, ErrNoMatch
	}
	var event api.Event
	dec := json.NewDecoder(bytes.NewReader(rawBody))
	if err := dec.Decode(&event); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	return &event, nil
}

// Sign returns the webhook-signature header value ("v1,<base64>") of a body,
// as the API makes it: for tests of a webhook handler.
func Sign(rawBody []byte, id string, timestamp time.Time, secret string) (string, error) {
	key, err := secretBytes(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(sign(key, id, strconv.FormatInt(timestamp.Unix(), 10), rawBody)), nil
}

func secretBytes(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, ErrInvalidSecret
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) == 0 {
		return nil, ErrInvalidSecret
	}
	return key, nil
}

func sign(key []byte, id, timestamp string, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}
