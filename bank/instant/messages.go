// Package instant speaks the sponsor bank's instant-payments API (API.md
// §10): RTP and FedNow credit transfers as ISO 20022 messages over HTTPS.
// A payment goes out as a pacs.008.001.08; the bank answers with a
// pacs.002.001.10 and is asked again with a pacs.028.001.04 while the
// answer is not final. The payment's id is the message's MsgId and
// EndToEndId: the bank deduplicates on it, so a message sent again after a
// timeout is never a second payment.
//
// It knows the messages and the bank, not the payments' lives: which
// payment to send, and what an answer does to it, is the connector's
// (bank.InstantOutbound).
package instant

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moov-io/iso20022/pkg/common"
	"github.com/moov-io/iso20022/pkg/pacs_v04"
	"github.com/moov-io/iso20022/pkg/pacs_v10"
)

// Namespaces of the three messages.
const (
	NamespacePacs008 = "urn:iso:std:iso:20022:tech:xsd:pacs.008.001.08"
	NamespacePacs002 = "urn:iso:std:iso:20022:tech:xsd:pacs.002.001.10"
	NamespacePacs028 = "urn:iso:std:iso:20022:tech:xsd:pacs.028.001.04"

	// msgNamePacs008 is the message name a status report or request cites.
	msgNamePacs008 = "pacs.008.001.08"
)

// MaxIDLen is ISO 20022's Max35Text: the longest MsgId or EndToEndId.
const MaxIDLen = 35

// Rails, as the payment names them.
const (
	RailRTP    = "rtp"
	RailFedNow = "fednow"
)

// localInstruments tell the bank which network takes the payment
// (PmtTpInf/LclInstrm/Prtry): the sponsor bank routes on it.
var localInstruments = map[string]string{RailRTP: "RTP", RailFedNow: "FEDNOW"}

// RailOf is the rail a local instrument names ("" if none).
func RailOf(localInstrument string) string {
	for r, li := range localInstruments {
		if li == localInstrument {
			return r
		}
	}
	return ""
}

// Party is one side of a transfer: a name, an account number and the
// routing number of the bank that holds the account.
type Party struct {
	Name          string
	AccountNumber string
	RoutingNumber string
}

// Payment is what a credit transfer carries.
type Payment struct {
	ID        string // MsgId, EndToEndId and TxId
	Rail      string // rtp or fednow
	Amount    int64  // cents
	CreatedAt time.Time
	Debtor    Party // the virtual account, at the sponsor bank
	Creditor  Party // the destination
}

// CheckID refuses an id that ISO 20022 cannot carry as a MsgId.
func CheckID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("id %q: a MsgId is 1 to %d characters", id, MaxIDLen)
	}
	return nil
}

// Amount writes cents as dollars with two decimals: 1234 → "12.34".
func Amount(cents int64) string {
	return fmt.Sprintf("%d.%02d", cents/100, cents%100)
}

// ParseAmount reads an xs:decimal of at most two decimals into cents.
func ParseAmount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 2 || len(whole) > 15 {
		return 0, fmt.Errorf("amount %q: not dollars with at most two decimals", s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	var cents int64
	for _, c := range whole + frac {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("amount %q: not dollars with at most two decimals", s)
		}
		cents = cents*10 + int64(c-'0')
	}
	return cents, nil
}

// isoTime is an ISODateTime in UTC with its zone, to the millisecond.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// The pacs.008 is written with these structs, not with the library's
// pacs_v08 ones: the library holds amounts in a float64, which encoding/xml
// writes as "1e+06" from $1,000,000 on (not an xs:decimal; RTP and FedNow
// go to $10,000,000) and as "10" for $10.00. Only the elements we send are
// here, in the schema's order.
type (
	creditTransferDocument struct {
		XMLName xml.Name       `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.008.001.08 Document"`
		Msg     creditTransfer `xml:"FIToFICstmrCdtTrf"`
	}
	creditTransfer struct {
		GrpHdr      groupHeader `xml:"GrpHdr"`
		CdtTrfTxInf []transfer  `xml:"CdtTrfTxInf"`
	}
	groupHeader struct {
		MsgId    string `xml:"MsgId"`
		CreDtTm  string `xml:"CreDtTm"`
		NbOfTxs  string `xml:"NbOfTxs"`
		SttlmInf struct {
			SttlmMtd string `xml:"SttlmMtd"`
		} `xml:"SttlmInf"`
	}
	transfer struct {
		PmtId struct {
			EndToEndId string `xml:"EndToEndId"`
			TxId       string `xml:"TxId"`
		} `xml:"PmtId"`
		PmtTpInf struct {
			LclInstrm struct {
				Prtry string `xml:"Prtry"`
			} `xml:"LclInstrm"`
		} `xml:"PmtTpInf"`
		IntrBkSttlmAmt struct {
			Value string `xml:",chardata"`
			Ccy   string `xml:"Ccy,attr"`
		} `xml:"IntrBkSttlmAmt"`
		ChrgBr   string  `xml:"ChrgBr"`
		Dbtr     party   `xml:"Dbtr"`
		DbtrAcct account `xml:"DbtrAcct"`
		DbtrAgt  agent   `xml:"DbtrAgt"`
		CdtrAgt  agent   `xml:"CdtrAgt"`
		Cdtr     party   `xml:"Cdtr"`
		CdtrAcct account `xml:"CdtrAcct"`
	}
	party struct {
		Nm string `xml:"Nm"`
	}
	account struct {
		Id struct {
			Othr struct {
				Id string `xml:"Id"`
			} `xml:"Othr"`
		} `xml:"Id"`
	}
	agent struct {
		FinInstnId struct {
			ClrSysMmbId struct {
				ClrSysId struct {
					Cd string `xml:"Cd"`
				} `xml:"ClrSysId"`
				MmbId string `xml:"MmbId"`
			} `xml:"ClrSysMmbId"`
		} `xml:"FinInstnId"`
	}
)

func newAccount(number string) account {
	var a account
	a.Id.Othr.Id = number
	return a
}

func newAgent(routing string) agent {
	var a agent
	a.FinInstnId.ClrSysMmbId.ClrSysId.Cd = "USABA"
	a.FinInstnId.ClrSysMmbId.MmbId = routing
	return a
}

// CreditTransfer writes the pacs.008.001.08 of a payment. The same payment
// gives the same bytes (CreDtTm is its creation time): a message sent again
// is the message sent before.
func CreditTransfer(p Payment) ([]byte, error) {
	if err := CheckID(p.ID); err != nil {
		return nil, err
	}
	li, ok := localInstruments[p.Rail]
	if !ok {
		return nil, fmt.Errorf("payment %s: rail %q is not an instant rail", p.ID, p.Rail)
	}
	if p.Amount < 1 {
		return nil, fmt.Errorf("payment %s: amount %d", p.ID, p.Amount)
	}
	for _, f := range [][2]string{{"debtor account", p.Debtor.AccountNumber}, {"debtor routing number", p.Debtor.RoutingNumber},
		{"creditor name", p.Creditor.Name}, {"creditor account", p.Creditor.AccountNumber}, {"creditor routing number", p.Creditor.RoutingNumber}} {
		if f[1] == "" {
			return nil, fmt.Errorf("payment %s: no %s", p.ID, f[0])
		}
	}
	var doc creditTransferDocument
	h := &doc.Msg.GrpHdr
	h.MsgId, h.CreDtTm, h.NbOfTxs, h.SttlmInf.SttlmMtd = p.ID, isoTime(p.CreatedAt), "1", "CLRG"
	var tx transfer
	tx.PmtId.EndToEndId, tx.PmtId.TxId = p.ID, p.ID
	tx.PmtTpInf.LclInstrm.Prtry = li
	tx.IntrBkSttlmAmt.Value, tx.IntrBkSttlmAmt.Ccy = Amount(p.Amount), "USD"
	tx.ChrgBr = "SLEV"
	tx.Dbtr.Nm, tx.DbtrAcct, tx.DbtrAgt = p.Debtor.Name, newAccount(p.Debtor.AccountNumber), newAgent(p.Debtor.RoutingNumber)
	tx.CdtrAgt, tx.Cdtr.Nm, tx.CdtrAcct = newAgent(p.Creditor.RoutingNumber), p.Creditor.Name, newAccount(p.Creditor.AccountNumber)
	doc.Msg.CdtTrfTxInf = []transfer{tx}
	return marshal(doc)
}

// ReadCreditTransfer reads a pacs.008.001.08 of one transaction: what the
// bank (the simulator) needs of it.
func ReadCreditTransfer(data []byte) (Payment, error) {
	var doc creditTransferDocument
	if err := xml.Unmarshal(data, &doc); err != nil {
		return Payment{}, fmt.Errorf("pacs.008: %w", err)
	}
	m := doc.Msg
	if len(m.CdtTrfTxInf) != 1 || m.GrpHdr.NbOfTxs != "1" {
		return Payment{}, errors.New("pacs.008: one transaction per message")
	}
	tx := m.CdtTrfTxInf[0]
	if err := CheckID(m.GrpHdr.MsgId); err != nil {
		return Payment{}, fmt.Errorf("pacs.008: %w", err)
	}
	if tx.IntrBkSttlmAmt.Ccy != "USD" {
		return Payment{}, fmt.Errorf("pacs.008: currency %q", tx.IntrBkSttlmAmt.Ccy)
	}
	amount, err := ParseAmount(tx.IntrBkSttlmAmt.Value)
	if err != nil {
		return Payment{}, fmt.Errorf("pacs.008: %w", err)
	}
	created, err := time.Parse(time.RFC3339Nano, m.GrpHdr.CreDtTm)
	if err != nil {
		return Payment{}, fmt.Errorf("pacs.008: CreDtTm: %w", err)
	}
	return Payment{ID: m.GrpHdr.MsgId, Rail: RailOf(tx.PmtTpInf.LclInstrm.Prtry), Amount: amount, CreatedAt: created,
		Debtor: Party{Name: tx.Dbtr.Nm, AccountNumber: tx.DbtrAcct.Id.Othr.Id, RoutingNumber: tx.DbtrAgt.FinInstnId.ClrSysMmbId.MmbId},
		Creditor: Party{Name: tx.Cdtr.Nm, AccountNumber: tx.CdtrAcct.Id.Othr.Id,
			RoutingNumber: tx.CdtrAgt.FinInstnId.ClrSysMmbId.MmbId}}, nil
}

// Transaction statuses of a pacs.002 (ISO external code set
// ExternalPaymentTransactionStatus1Code): the ones the bank may answer.
const (
	StatusSettled    = "ACSC" // settled: the payment completed
	StatusCredited   = "ACCC" // the creditor's account is credited: completed too
	StatusRejected   = "RJCT"
	StatusInProgress = "ACSP" // accepted, settlement in process
	StatusPending    = "PDNG"
	StatusTechnical  = "ACTC" // accepted after technical validation only
)

// Outcome is what a status means for the payment.
type Outcome int

const (
	Unknown Outcome = iota
	Completed
	Rejected
	InProgress
)

var outcomes = map[string]Outcome{
	StatusSettled: Completed, StatusCredited: Completed,
	StatusRejected:   Rejected,
	StatusInProgress: InProgress, StatusPending: InProgress, StatusTechnical: InProgress,
}

// Status is the bank's answer about one payment.
type Status struct {
	TxSts              string // ACSC, RJCT, ACSP, PDNG…
	Reason             string // StsRsnInf/Rsn/Cd: a rejection's reason code
	OriginalMsgID      string
	OriginalEndToEndID string
}

// Outcome is what the status means; Unknown for a status this package does
// not know (ReadStatus refuses those).
func (s Status) Outcome() Outcome { return outcomes[s.TxSts] }

type statusReportDocument struct {
	XMLName xml.Name                              `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.002.001.10 Document"`
	Msg     pacs_v10.FIToFIPaymentStatusReportV10 `xml:"FIToFIPmtStsRpt"`
}

// ReadStatus reads the bank's pacs.002.001.10 about the payment paymentID.
// It refuses a document that does not parse, one about another payment,
// a status it does not know and a rejection without a reason code.
func ReadStatus(data []byte, paymentID string) (Status, error) {
	var doc statusReportDocument
	if err := xml.Unmarshal(data, &doc); err != nil {
		return Status{}, fmt.Errorf("pacs.002: %w", err)
	}
	m := doc.Msg
	var s Status
	for _, g := range m.OrgnlGrpInfAndSts {
		s.OriginalMsgID = string(g.OrgnlMsgId)
		if g.GrpSts != nil { // a group status stands for a one-transaction message
			s.TxSts = string(*g.GrpSts)
		}
		s.Reason = reasonOf(g.StsRsnInf)
	}
	if len(m.TxInfAndSts) > 1 || len(m.OrgnlGrpInfAndSts) > 1 {
		return Status{}, errors.New("pacs.002: more than one status; a payment is one message of one transaction")
	}
	if len(m.TxInfAndSts) == 1 {
		tx := m.TxInfAndSts[0]
		if tx.OrgnlGrpInf != nil {
			s.OriginalMsgID = string(tx.OrgnlGrpInf.OrgnlMsgId)
		}
		if tx.OrgnlEndToEndId != nil {
			s.OriginalEndToEndID = string(*tx.OrgnlEndToEndId)
		}
		if tx.TxSts != nil {
			s.TxSts = string(*tx.TxSts)
		}
		if r := reasonOf(tx.StsRsnInf); r != "" {
			s.Reason = r
		}
	}
	switch {
	case s.OriginalMsgID == "" && s.OriginalEndToEndID == "":
		return Status{}, errors.New("pacs.002: no original MsgId or EndToEndId")
	case s.OriginalMsgID != "" && s.OriginalMsgID != paymentID, s.OriginalEndToEndID != "" && s.OriginalEndToEndID != paymentID:
		return Status{}, fmt.Errorf("pacs.002: about message %q / %q, not payment %s", s.OriginalMsgID, s.OriginalEndToEndID, paymentID)
	case s.TxSts == "":
		return Status{}, errors.New("pacs.002: no TxSts")
	case s.Outcome() == Unknown:
		return Status{}, fmt.Errorf("pacs.002: unknown status %q", s.TxSts)
	case s.Outcome() == Rejected && s.Reason == "":
		return Status{}, errors.New("pacs.002: RJCT without a reason code (StsRsnInf/Rsn/Cd)")
	}
	return s, nil
}

func reasonOf(infos []pacs_v10.StatusReasonInformation12) string {
	for _, i := range infos {
		if i.Rsn != nil && i.Rsn.Cd != nil {
			return string(*i.Rsn.Cd)
		}
	}
	return ""
}

// StatusReport writes the pacs.002.001.10 a bank answers about a payment
// (the simulator's answers; the tests').
func StatusReport(msgID string, s Status, at time.Time) ([]byte, error) {
	orig, e2e := common.Max35Text(s.OriginalMsgID), common.Max35Text(s.OriginalEndToEndID)
	tx := pacs_v10.PaymentTransaction110{OrgnlEndToEndId: &e2e}
	st := pacs_v10.ExternalPaymentTransactionStatus1Code(s.TxSts)
	tx.TxSts = &st
	if s.Reason != "" {
		cd := pacs_v10.ExternalStatusReason1Code(s.Reason)
		tx.StsRsnInf = []pacs_v10.StatusReasonInformation12{{Rsn: &pacs_v10.StatusReason6Choice{Cd: &cd}}}
	}
	doc := statusReportDocument{Msg: pacs_v10.FIToFIPaymentStatusReportV10{
		GrpHdr:            pacs_v10.GroupHeader91{MsgId: common.Max35Text(msgID), CreDtTm: common.ISODateTime(at.UTC())},
		OrgnlGrpInfAndSts: []pacs_v10.OriginalGroupHeader17{{OrgnlMsgId: orig, OrgnlMsgNmId: msgNamePacs008}},
		TxInfAndSts:       []pacs_v10.PaymentTransaction110{tx},
	}}
	return marshal(doc)
}

type statusRequestDocument struct {
	XMLName xml.Name                               `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.028.001.04 Document"`
	Msg     pacs_v04.FIToFIPaymentStatusRequestV04 `xml:"FIToFIPmtStsReq"`
}

// StatusRequest writes the pacs.028.001.04 that asks the bank about the
// payment paymentID; msgID is the request's own id.
func StatusRequest(msgID, paymentID string, at time.Time) ([]byte, error) {
	if err := CheckID(paymentID); err != nil {
		return nil, err
	}
	if err := CheckID(msgID); err != nil {
		return nil, err
	}
	id := common.Max35Text(paymentID)
	doc := statusRequestDocument{Msg: pacs_v04.FIToFIPaymentStatusRequestV04{
		GrpHdr: pacs_v04.GroupHeader91{MsgId: common.Max35Text(msgID), CreDtTm: common.ISODateTime(at.UTC())},
		TxInf: []pacs_v04.PaymentTransaction121{{
			OrgnlGrpInf:     &pacs_v04.OriginalGroupInformation29{OrgnlMsgId: id, OrgnlMsgNmId: msgNamePacs008},
			OrgnlEndToEndId: &id,
		}},
	}}
	return marshal(doc)
}

// ReadStatusRequest is the payment a pacs.028.001.04 asks about.
func ReadStatusRequest(data []byte) (string, error) {
	var doc statusRequestDocument
	if err := xml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("pacs.028: %w", err)
	}
	if len(doc.Msg.TxInf) != 1 {
		return "", errors.New("pacs.028: one transaction per request")
	}
	tx := doc.Msg.TxInf[0]
	switch {
	case tx.OrgnlGrpInf != nil && tx.OrgnlGrpInf.OrgnlMsgId != "":
		return string(tx.OrgnlGrpInf.OrgnlMsgId), nil
	case tx.OrgnlEndToEndId != nil && *tx.OrgnlEndToEndId != "":
		return string(*tx.OrgnlEndToEndId), nil
	}
	return "", errors.New("pacs.028: no original MsgId or EndToEndId")
}

func marshal(doc any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	if err := xml.NewEncoder(&b).Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
