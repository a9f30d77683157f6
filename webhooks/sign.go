// Package webhooks delivers public events to the endpoints platforms
// register: a watermill subscriber fans each event out into delivery rows,
// and a sender claims due deliveries, signs them (Standard Webhooks) and
// POSTs them outside any transaction, with retries and an SSRF-safe dialer.
package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/opentreasury/treasury/domain/webhook"
)

// SecretPrefix starts every endpoint secret.
const SecretPrefix = webhook.SecretPrefix

// Sign returns the Standard Webhooks signature of a message: "v1," and the
// base64 HMAC-SHA256, keyed with the secret's bytes (the base64 after
// whsec_), of "id.timestamp.body".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhook secret is not base64: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// SignAll signs with every secret in force (during a rotation, the new
// and the old), space-separated as Standard Webhooks allows.
func SignAll(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := Sign(s, id, timestamp, body)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}
