package instant_test

import (
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/bank/instant"
)

const payID = "pay_01jh2k3m4n5p6q7r8s9t0v1w2x" // 30 characters, as domain.NewID makes them

func samplePayment() instant.Payment {
	return instant.Payment{ID: payID, Rail: "rtp", Amount: 1234, CreatedAt: time.Date(2026, 1, 13, 14, 0, 0, 0, time.UTC),
		Debtor:   instant.Party{Name: "Acme Widgets LLC", AccountNumber: "8800001234", RoutingNumber: "021000021"},
		Creditor: instant.Party{Name: "Initech & Sons <LLC>", AccountNumber: "123456789", RoutingNumber: "011000015"}}
}

// element is the text of the first element named by path (a/b/c), read
// with no knowledge of the package's structs.
func element(t *testing.T, doc []byte, path string) (string, map[string]string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(doc)))
	want := strings.Split(path, "/")
	var stack []string
	var attrs map[string]string
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("%s not in the document: %v", path, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			attrs = map[string]string{}
			for _, a := range e.Attr {
				attrs[a.Name.Local] = a.Value
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if strings.Join(stack, "/") == strings.Join(want, "/") {
				return string(e), attrs
			}
		}
	}
}

func TestCreditTransfer(t *testing.T) {
	doc, err := instant.CreditTransfer(samplePayment())
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	if !strings.HasPrefix(s, `<?xml version="1.0" encoding="UTF-8"?>`) ||
		!strings.Contains(s, `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.008.001.08"><FIToFICstmrCdtTrf><GrpHdr>`) {
		t.Fatalf("head of the document:\n%s", s)
	}
	const tx = "Document/FIToFICstmrCdtTrf/CdtTrfTxInf/"
	for path, want := range map[string]string{
		"Document/FIToFICstmrCdtTrf/GrpHdr/MsgId":             payID,
		"Document/FIToFICstmrCdtTrf/GrpHdr/CreDtTm":           "2026-01-13T14:00:00.000Z",
		"Document/FIToFICstmrCdtTrf/GrpHdr/NbOfTxs":           "1",
		"Document/FIToFICstmrCdtTrf/GrpHdr/SttlmInf/SttlmMtd": "CLRG",
		tx + "PmtId/EndToEndId":                               payID,
		tx + "PmtTpInf/LclInstrm/Prtry":                       "RTP",
		tx + "IntrBkSttlmAmt":                                 "12.34",
		tx + "ChrgBr":                                         "SLEV",
		tx + "Dbtr/Nm":                                        "Acme Widgets LLC",
		tx + "DbtrAcct/Id/Othr/Id":                            "8800001234",
		tx + "DbtrAgt/FinInstnId/ClrSysMmbId/ClrSysId/Cd":     "USABA",
		tx + "DbtrAgt/FinInstnId/ClrSysMmbId/MmbId":           "021000021",
		tx + "CdtrAgt/FinInstnId/ClrSysMmbId/MmbId":           "011000015",
		tx + "Cdtr/Nm":                                        "Initech & Sons <LLC>",
		tx + "CdtrAcct/Id/Othr/Id":                            "123456789",
	} {
		got, attrs := element(t, doc, path)
		if got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
		if path == tx+"IntrBkSttlmAmt" && attrs["Ccy"] != "USD" {
			t.Errorf("IntrBkSttlmAmt attributes %v", attrs)
		}
	}
	// The schema's order: the creditor agent before the creditor.
	if i, j := strings.Index(s, "<DbtrAgt>"), strings.Index(s, "<CdtrAgt>"); i < 0 || j < i || strings.Index(s, "<Cdtr>") < j {
		t.Errorf("agents out of order:\n%s", s)
	}
	// The same payment, the same bytes: a message sent again is the same.
	again, _ := instant.CreditTransfer(samplePayment())
	if string(again) != s {
		t.Error("two documents of one payment differ")
	}
	// It reads back.
	p, err := instant.ReadCreditTransfer(doc)
	if want := samplePayment(); err != nil || p != want {
		t.Errorf("read back %+v, %v; want %+v", p, err, want)
	}

	f := samplePayment()
	f.Rail = "fednow"
	doc, _ = instant.CreditTransfer(f)
	if got, _ := element(t, doc, tx+"PmtTpInf/LclInstrm/Prtry"); got != "FEDNOW" {
		t.Errorf("fednow's local instrument %q", got)
	}
}

func TestAmounts(t *testing.T) {
	for cents, want := range map[int64]string{1: "0.01", 10: "0.10", 100: "1.00", 1234: "12.34", 1_000_000_000: "10000000.00",
		99_999_999_99: "99999999.99"} {
		if got := instant.Amount(cents); got != want {
			t.Errorf("Amount(%d) = %q, want %q", cents, got, want)
		}
		if back, err := instant.ParseAmount(want); err != nil || back != cents {
			t.Errorf("ParseAmount(%q) = %d, %v", want, back, err)
		}
	}
	for _, bad := range []string{"", "1.234", "1e6", "-1.00", "1,00", ".5", "12.x"} {
		if _, err := instant.ParseAmount(bad); err == nil {
			t.Errorf("ParseAmount(%q) took it", bad)
		}
	}
}

func TestCreditTransferRefuses(t *testing.T) {
	for name, change := range map[string]func(*instant.Payment){
		"an id over 35 characters": func(p *instant.Payment) { p.ID = strings.Repeat("x", 36) },
		"an ACH rail":              func(p *instant.Payment) { p.Rail = "ach_same_day" },
		"no amount":                func(p *instant.Payment) { p.Amount = 0 },
		"no creditor account":      func(p *instant.Payment) { p.Creditor.AccountNumber = "" },
		"no debtor routing":        func(p *instant.Payment) { p.Debtor.RoutingNumber = "" },
	} {
		p := samplePayment()
		change(&p)
		if _, err := instant.CreditTransfer(p); err == nil {
			t.Errorf("%s: written", name)
		}
	}
	p := samplePayment()
	p.ID = strings.Repeat("x", 35)
	if _, err := instant.CreditTransfer(p); err != nil {
		t.Errorf("a 35-character id: %v", err)
	}
}

// pacs002 is a status report as a bank writes it.
func pacs002(origMsgID, e2e, txSts, reason string) string {
	s := `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.002.001.10">
  <FIToFIPmtStsRpt>
    <GrpHdr><MsgId>BANK0001</MsgId><CreDtTm>2026-01-13T14:00:01.250Z</CreDtTm></GrpHdr>
    <OrgnlGrpInfAndSts><OrgnlMsgId>` + origMsgID + `</OrgnlMsgId><OrgnlMsgNmId>pacs.008.001.08</OrgnlMsgNmId></OrgnlGrpInfAndSts>
    <TxInfAndSts>
      <OrgnlEndToEndId>` + e2e + `</OrgnlEndToEndId>
      <TxSts>` + txSts + `</TxSts>`
	if reason != "" {
		s += `<StsRsnInf><Rsn><Cd>` + reason + `</Cd></Rsn><AddtlInf>see the code</AddtlInf></StsRsnInf>`
	}
	return s + `
    </TxInfAndSts>
  </FIToFIPmtStsRpt>
</Document>`
}

func TestReadStatus(t *testing.T) {
	cases := []struct {
		name    string
		doc     string
		want    instant.Status
		outcome instant.Outcome
		err     string
	}{
		{"settled", pacs002(payID, payID, "ACSC", ""), instant.Status{TxSts: "ACSC"}, instant.Completed, ""},
		{"rejected", pacs002(payID, payID, "RJCT", "AC04"), instant.Status{TxSts: "RJCT", Reason: "AC04"}, instant.Rejected, ""},
		{"in process", pacs002(payID, payID, "ACSP", ""), instant.Status{TxSts: "ACSP"}, instant.InProgress, ""},
		{"pending", pacs002(payID, payID, "PDNG", ""), instant.Status{TxSts: "PDNG"}, instant.InProgress, ""},
		{"rejected, no code", pacs002(payID, payID, "RJCT", ""), instant.Status{}, 0, "without a reason code"},
		{"unknown status", pacs002(payID, payID, "WHAT", ""), instant.Status{}, 0, `unknown status "WHAT"`},
		{"no status", pacs002(payID, payID, "", ""), instant.Status{}, 0, "no TxSts"},
		{"another payment's MsgId", pacs002("pay_other", payID, "ACSC", ""), instant.Status{}, 0, "not payment"},
		{"another payment's EndToEndId", pacs002(payID, "pay_other", "ACSC", ""), instant.Status{}, 0, "not payment"},
		{"garbage", "<html>502 Bad Gateway</html>", instant.Status{}, 0, "pacs.002"},
		{"not XML", "OK", instant.Status{}, 0, "pacs.002"},
		{"another message", strings.Replace(pacs002(payID, payID, "ACSC", ""), "pacs.002.001.10", "pacs.002.001.08", 1),
			instant.Status{}, 0, "pacs.002"},
	}
	for _, c := range cases {
		got, err := instant.ReadStatus([]byte(c.doc), payID)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %+v, %v; want an error with %q", c.name, got, err, c.err)
			}
			continue
		}
		c.want.OriginalMsgID, c.want.OriginalEndToEndID = payID, payID
		if err != nil || got != c.want || got.Outcome() != c.outcome {
			t.Errorf("%s: %+v (%d), %v; want %+v (%d)", c.name, got, got.Outcome(), err, c.want, c.outcome)
		}
	}
}

func TestStatusReportReadsBack(t *testing.T) {
	want := instant.Status{TxSts: "RJCT", Reason: "9912", OriginalMsgID: payID, OriginalEndToEndID: payID}
	doc, err := instant.StatusReport("BANK1", want, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.002.001.10">`) {
		t.Errorf("namespace:\n%s", doc)
	}
	if got, err := instant.ReadStatus(doc, payID); err != nil || got != want {
		t.Errorf("read back %+v, %v", got, err)
	}
}

func TestStatusRequest(t *testing.T) {
	doc, err := instant.StatusRequest("psr_1", payID, time.Date(2026, 1, 13, 14, 0, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^<\?xml[^>]*\?>\n<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.028.001.04"><FIToFIPmtStsReq>`).Match(doc) {
		t.Errorf("head:\n%s", doc)
	}
	for path, want := range map[string]string{
		"Document/FIToFIPmtStsReq/GrpHdr/MsgId":                   "psr_1",
		"Document/FIToFIPmtStsReq/TxInf/OrgnlGrpInf/OrgnlMsgId":   payID,
		"Document/FIToFIPmtStsReq/TxInf/OrgnlGrpInf/OrgnlMsgNmId": "pacs.008.001.08",
		"Document/FIToFIPmtStsReq/TxInf/OrgnlEndToEndId":          payID,
		"Document/FIToFIPmtStsReq/GrpHdr/CreDtTm":                 "2026-01-13T14:00:05",
	} {
		if got, _ := element(t, doc, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if id, err := instant.ReadStatusRequest(doc); err != nil || id != payID {
		t.Errorf("read back %q, %v", id, err)
	}
	if _, err := instant.StatusRequest("psr_1", strings.Repeat("x", 36), time.Now()); err == nil {
		t.Error("a 36-character id was asked about")
	}
}
