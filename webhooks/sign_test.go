package webhooks_test

import (
	"strings"
	"testing"

	"github.com/opentreasury/treasury/webhooks"
)

// The Standard Webhooks published test vector.
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS     = int64(1614265330)
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignStandardWebhooksVector(t *testing.T) {
	got, err := webhooks.Sign(vecSecret, vecID, vecTS, []byte(vecBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != vecSig {
		t.Fatalf("Sign = %q, want %q", got, vecSig)
	}
	// Any change of id, timestamp or body changes the signature.
	for name, sig := range map[string]func() (string, error){
		"id":   func() (string, error) { return webhooks.Sign(vecSecret, vecID+"x", vecTS, []byte(vecBody)) },
		"ts":   func() (string, error) { return webhooks.Sign(vecSecret, vecID, vecTS+1, []byte(vecBody)) },
		"body": func() (string, error) { return webhooks.Sign(vecSecret, vecID, vecTS, []byte(vecBody+" ")) },
	} {
		s, err := sig()
		if err != nil || s == vecSig {
			t.Errorf("changed %s: signature %q, err %v", name, s, err)
		}
	}
}

func TestSignAllTwoSecrets(t *testing.T) {
	other := "whsec_" + strings.Repeat("A", 43) + "="
	otherSig, err := webhooks.Sign(other, vecID, vecTS, []byte(vecBody))
	if err != nil {
		t.Fatal(err)
	}
	got, err := webhooks.SignAll([]string{vecSecret, other}, vecID, vecTS, []byte(vecBody))
	if err != nil {
		t.Fatal(err)
	}
	if want := vecSig + " " + otherSig; got != want {
		t.Fatalf("SignAll = %q, want %q", got, want)
	}
	if parts := strings.Split(got, " "); len(parts) != 2 || parts[0] == parts[1] {
		t.Fatalf("SignAll parts %q", parts)
	}
}

func TestSignBadSecret(t *testing.T) {
	if _, err := webhooks.Sign("whsec_not*base64!", vecID, vecTS, []byte(vecBody)); err == nil {
		t.Fatal("Sign with a non-base64 secret: no error")
	}
	if _, err := webhooks.SignAll([]string{vecSecret, "whsec_%%%"}, vecID, vecTS, []byte(vecBody)); err == nil {
		t.Fatal("SignAll with one bad secret: no error")
	}
}
