package instant_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opentreasury/treasury/bank/instant"
)

func TestSimulatedBankMagicNumbers(t *testing.T) {
	sim := instant.NewSimulatedBank("Bearer k")
	srv := httptest.NewServer(sim)
	defer srv.Close()
	c := fastClient(srv.URL, "Bearer k")
	cases := []struct {
		account, rail, txSts, reason string
	}{
		{"123456789", "rtp", "ACSC", ""},
		{"123456789", "fednow", "ACSC", ""},
		{"4000000002", "rtp", "RJCT", "AC04"},
		{"4000000003", "fednow", "RJCT", "AC03"},
		{"4000000004", "rtp", "RJCT", "AC02"},
		{"4000000016", "rtp", "RJCT", "AC06"},
		{"4000000023", "fednow", "RJCT", "CUST"},
		{"4000009912", "rtp", "RJCT", "9912"},
		{"4000009912", "fednow", "RJCT", "E997"},
		{instant.PendingAccount, "rtp", "ACSP", ""},
	}
	for i, tc := range cases {
		p := samplePayment()
		p.ID = payID[:len(payID)-2] + string(rune('a'+i)) + "0"
		p.Rail, p.Creditor.AccountNumber = tc.rail, tc.account
		st, err := c.Send(context.Background(), p)
		if err != nil || st.TxSts != tc.txSts || st.Reason != tc.reason {
			t.Errorf("%s on %s: %+v, %v; want %s %s", tc.account, tc.rail, st, err, tc.txSts, tc.reason)
		}
	}
	if n := sim.Payments(); n != len(cases) {
		t.Errorf("%d payments, want %d", n, len(cases))
	}
}

func TestSimulatedBankPendingSettlesWhenAsked(t *testing.T) {
	sim := instant.NewSimulatedBank("")
	srv := httptest.NewServer(sim)
	defer srv.Close()
	c := fastClient(srv.URL, "")
	p := samplePayment()
	p.Creditor.AccountNumber = instant.PendingAccount
	if st, err := c.Send(context.Background(), p); err != nil || st.TxSts != "ACSP" {
		t.Fatalf("Send = %+v, %v", st, err)
	}
	if st, err := c.Ask(context.Background(), p.ID); err != nil || st.TxSts != "ACSC" {
		t.Fatalf("Ask = %+v, %v", st, err)
	}
	// The pacs.008 again: its first answer, and still one payment.
	if st, err := c.Send(context.Background(), p); err != nil || st.TxSts != "ACSP" || sim.Payments() != 1 || sim.Requests() != 2 {
		t.Errorf("Send again = %+v, %v; %d payments of %d requests", st, err, sim.Payments(), sim.Requests())
	}
	if _, st, ok := sim.Payment(p.ID); !ok || st.TxSts != "ACSC" {
		t.Errorf("the bank holds %+v", st)
	}
	// A payment the bank never had: 404, not an answer.
	if _, err := c.Ask(context.Background(), "pay_never_sent"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Ask about an unknown payment = %v", err)
	}
}

func TestSimulatedBankDeduplicates(t *testing.T) {
	sim := instant.NewSimulatedBank("")
	srv := httptest.NewServer(sim)
	defer srv.Close()
	c := fastClient(srv.URL, "")
	first, err := c.Send(context.Background(), samplePayment())
	if err != nil {
		t.Fatal(err)
	}
	// Same MsgId, another destination: still the first answer.
	p := samplePayment()
	p.Creditor.AccountNumber = "4000000002"
	again, err := c.Send(context.Background(), p)
	if err != nil || again != first || sim.Payments() != 1 {
		t.Errorf("again %+v, %v (first %+v); %d payments", again, err, first, sim.Payments())
	}
}

func TestSimulatedBankRefuses(t *testing.T) {
	sim := instant.NewSimulatedBank("Bearer k")
	srv := httptest.NewServer(sim)
	defer srv.Close()
	doc, _ := instant.CreditTransfer(samplePayment())
	post := func(path, auth, body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, path, auth, body string
		want                   int
	}{
		{"no auth", "/pacs.008", "", string(doc), 401},
		{"wrong auth", "/pacs.008", "Bearer x", string(doc), 401},
		{"garbage", "/pacs.008", "Bearer k", "<Document>", 400},
		{"another namespace", "/pacs.008", "Bearer k", strings.Replace(string(doc), "pacs.008.001.08", "pacs.008.001.06", 1), 400},
		{"no rail", "/pacs.008", "Bearer k", strings.Replace(string(doc), "<Prtry>RTP</Prtry>", "<Prtry>WIRE</Prtry>", 1), 400},
		{"garbage status request", "/pacs.028", "Bearer k", "nope", 400},
		{"unknown path", "/pacs.009", "Bearer k", string(doc), 404},
		{"the payment", "/pacs.008", "Bearer k", string(doc), 200},
	} {
		if got := post(tc.path, tc.auth, tc.body); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if sim.Payments() != 1 {
		t.Errorf("%d payments", sim.Payments())
	}
}
