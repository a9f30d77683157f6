package webhooks_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/clients/go/webhooks"
)

var (
	secret   = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	other    = "whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret, another endpoint"))
	body     = []byte(`{"id":"evt_01jh3w5f6g7h8j9k0m1n2p3q4r","object":"event","type":"payment.completed","platform_id":"plt_1","environment":"sandbox","created_at":"2026-01-15T09:30:00.000Z","data":{"object":{"id":"pay_1","object":"payment"}}}`)
	delivery = "msg_01jh3w5f6g7h8j9k0m1n2p3q4r"
)

func headers(t *testing.T, at time.Time, secrets ...string) http.Header {
	t.Helper()
	var sigs []string
	for _, s := range secrets {
		sig, err := webhooks.Sign(body, delivery, at, s)
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, sig)
	}
	h := http.Header{}
	h.Set("Webhook-Id", delivery)
	h.Set("Webhook-Timestamp", strconv.FormatInt(at.Unix(), 10))
	h.Set("Webhook-Signature", strings.Join(sigs, " "))
	return h
}

func TestVerify(t *testing.T) {
	now := time.Now()
	event, err := webhooks.Verify(body, headers(t, now, secret), secret)
	if err != nil {
		t.Fatal(err)
	}
	if event.Id != "evt_01jh3w5f6g7h8j9k0m1n2p3q4r" || event.Type != "payment.completed" || event.Data.Object["id"] != "pay_1" {
		t.Fatalf("event %+v", event)
	}
}

// A known vector: the signature the API makes (HMAC-SHA256 of
// "id.timestamp.body" under the secret's bytes, base64).
func TestSignKnownVector(t *testing.T) {
	sig, err := webhooks.Sign([]byte(`{"a":1}`), "msg_1", time.Unix(1700000000, 0), "whsec_c2VjcmV0")
	if err != nil {
		t.Fatal(err)
	}
	// printf 'msg_1.1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret -binary | base64
	if sig != "v1,Q5nZ7DiOGwijBBqvBVAK6c0zDr2JLkXI7TaV4f+Q2vY=" {
		t.Fatalf("signature %s", sig)
	}
}

func TestVerifyDuringRotation(t *testing.T) {
	h := headers(t, time.Now(), other, secret)
	for _, s := range []string{secret, other} {
		if _, err := webhooks.Verify(body, h, s); err != nil {
			t.Fatalf("with %s: %v", s, err)
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	now := time.Now()
	good := headers(t, now, secret)
	tampered := append([]byte(nil), body...)
	tampered[10] ^= 1
	noV1 := good.Clone()
	noV1.Set("Webhook-Signature", strings.Replace(good.Get("Webhook-Signature"), "v1,", "v2,", 1))
	otherID := good.Clone()
	otherID.Set("Webhook-Id", "msg_other")
	badTS := good.Clone()
	badTS.Set("Webhook-Timestamp", "yesterday")
	missing := good.Clone()
	missing.Del("Webhook-Signature")
	garbage := good.Clone()
	garbage.Set("Webhook-Signature", "v1,not-base64!! v1")

	cases := []struct {
		name   string
		body   []byte
		h      http.Header
		secret string
		want   error
	}{
		{"tampered body", tampered, good, secret, webhooks.ErrNoMatch},
		{"wrong secret", body, good, other, webhooks.ErrNoMatch},
		{"another delivery's id", body, otherID, secret, webhooks.ErrNoMatch},
		{"not v1", body, noV1, secret, webhooks.ErrNoMatch},
		{"garbage signature", body, garbage, secret, webhooks.ErrNoMatch},
		{"six minutes old", body, headers(t, now.Add(-6*time.Minute), secret), secret, webhooks.ErrTimestampTooOld},
		{"six minutes ahead", body, headers(t, now.Add(6*time.Minute), secret), secret, webhooks.ErrTimestampTooNew},
		{"bad timestamp", body, badTS, secret, webhooks.ErrInvalidTimestamp},
		{"missing header", body, missing, secret, webhooks.ErrMissingHeader},
		{"secret without whsec_", body, good, "c2VjcmV0", webhooks.ErrInvalidSecret},
		{"secret not base64", body, good, "whsec_***", webhooks.ErrInvalidSecret},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := webhooks.Verify(tc.body, tc.h, tc.secret)
			if !errors.Is(err, tc.want) || !errors.Is(err, webhooks.ErrVerification) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyTolerance(t *testing.T) {
	at := time.Unix(1700000000, 0)
	h := headers(t, at, secret)
	if _, err := webhooks.VerifyAt(body, h, secret, at.Add(4*time.Minute), webhooks.Tolerance); err != nil {
		t.Fatalf("four minutes late: %v", err)
	}
	if _, err := webhooks.VerifyAt(body, h, secret, at.Add(4*time.Minute), time.Minute); !errors.Is(err, webhooks.ErrTimestampTooOld) {
		t.Fatalf("a one-minute tolerance: %v", err)
	}
}

func TestVerifyNotAnEvent(t *testing.T) {
	raw := []byte(`not json`)
	now := time.Now()
	sig, _ := webhooks.Sign(raw, delivery, now, secret)
	h := http.Header{}
	h.Set("webhook-id", delivery)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	if _, err := webhooks.Verify(raw, h, secret); !errors.Is(err, webhooks.ErrInvalidPayload) {
		t.Fatalf("got %v", err)
	}
}
