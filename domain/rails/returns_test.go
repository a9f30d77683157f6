package rails

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
)

type wantFailure struct {
	code, action, suggested string
	retryAfter              bool // retry_later rows say how long to wait
}

// NACHA return codes: what each must mean to the platform.
var wantACH = map[string]wantFailure{
	"R01": {code: "insufficient_funds", action: ActionRetryLater, retryAfter: true},
	"R02": {code: "account_closed", action: ActionUpdateDestination},
	"R03": {code: "no_account", action: ActionUpdateDestination},
	"R04": {code: "invalid_account_number", action: ActionUpdateDestination},
	"R05": {code: "unauthorized_debit", action: ActionDoNotRetry},
	"R06": {code: "returned_by_odfi", action: ActionContactRecipient},
	"R07": {code: "authorization_revoked", action: ActionDoNotRetry},
	"R08": {code: "payment_stopped", action: ActionContactRecipient},
	"R09": {code: "uncollected_funds", action: ActionRetryLater, retryAfter: true},
	"R10": {code: "unauthorized", action: ActionDoNotRetry},
	"R11": {code: "entry_not_per_authorization", action: ActionContactRecipient},
	"R12": {code: "account_sold", action: ActionUpdateDestination},
	"R13": {code: "invalid_routing_number", action: ActionUpdateDestination},
	"R14": {code: "recipient_deceased", action: ActionDoNotRetry},
	"R15": {code: "recipient_deceased", action: ActionDoNotRetry},
	"R16": {code: "account_frozen", action: ActionContactRecipient},
	"R17": {code: "file_record_edit_criteria", action: ActionContactRecipient},
	"R20": {code: "non_transaction_account", action: ActionUpdateDestination},
	"R23": {code: "credit_refused", action: ActionDoNotRetry},
	"R24": {code: "duplicate_entry", action: ActionDoNotRetry},
	"R29": {code: "corporate_not_authorized", action: ActionDoNotRetry},
}

// ISO 20022 reason codes of RTP and FedNow.
var wantISO = map[string]wantFailure{
	"AC02": {code: "invalid_account_number", action: ActionUpdateDestination},
	"AC03": {code: "no_account", action: ActionUpdateDestination},
	"AC04": {code: "account_closed", action: ActionUpdateDestination},
	"AC06": {code: "account_frozen", action: ActionContactRecipient},
	"AC07": {code: "account_closed", action: ActionUpdateDestination},
	"AG01": {code: "transaction_forbidden", action: ActionRetryOtherRail, suggested: "ach_standard"},
	"AG03": {code: "transaction_not_supported", action: ActionRetryOtherRail, suggested: "ach_standard"},
	"AM02": {code: "amount_exceeds_limit", action: ActionRetryOtherRail, suggested: "ach_standard"},
	"AM04": {code: "insufficient_funds", action: ActionRetryLater, retryAfter: true},
	"BE04": {code: "invalid_recipient", action: ActionUpdateDestination},
	"CUST": {code: "credit_refused", action: ActionDoNotRetry},
	"DUPL": {code: "duplicate_entry", action: ActionDoNotRetry},
	"FF01": {code: "invalid_format", action: ActionContactRecipient},
	"MS03": {code: "not_specified", action: ActionRetryLater, retryAfter: true},
	"NARR": {code: "not_specified", action: ActionContactRecipient},
	"RC01": {code: "invalid_routing_number", action: ActionUpdateDestination},
	"9912": {code: "network_unavailable", action: ActionRetryOtherRail, suggested: "ach_same_day"},
	"E997": {code: "network_unavailable", action: ActionRetryOtherRail, suggested: "ach_same_day"},
}

func keys(m map[string]wantFailure) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func checkFailure(t *testing.T, r Rail, code string, w wantFailure) {
	t.Helper()
	f := FailureFor(r, code)
	if f.Code != w.code || f.NetworkCode != code || f.Reason == "" ||
		f.Advice.Action != w.action || f.Advice.SuggestedRail != w.suggested {
		t.Errorf("FailureFor(%s, %q) = %+v, want code %q action %q suggested %q and a reason",
			r, code, f, w.code, w.action, w.suggested)
	}
	if w.retryAfter != (f.Advice.RetryAfterSeconds > 0) {
		t.Errorf("FailureFor(%s, %q): retry_after = %d, want set: %v", r, code, f.Advice.RetryAfterSeconds, w.retryAfter)
	}
	if w.suggested != "" {
		if _, ok := Parse(w.suggested); !ok {
			t.Errorf("%q: suggested rail %q is not a rail", code, w.suggested)
		}
	}
	if !KnownNetworkCode(r, code) {
		t.Errorf("KnownNetworkCode(%s, %q) = false", r, code)
	}
}

func TestACHReturnCodes(t *testing.T) {
	for _, r := range []Rail{ACHStandard, ACHSameDay} {
		for _, code := range keys(wantACH) {
			checkFailure(t, r, code, wantACH[code])
		}
		// An ISO code means nothing on ACH.
		for _, code := range keys(wantISO) {
			if KnownNetworkCode(r, code) {
				t.Errorf("KnownNetworkCode(%s, %q) = true", r, code)
			}
			if f := FailureFor(r, code); f.Code != "unknown" {
				t.Errorf("FailureFor(%s, %q).Code = %q, want unknown", r, code, f.Code)
			}
		}
	}
	// The code's table holds exactly the rows tested here.
	if len(achReturns) != len(wantACH) {
		t.Errorf("achReturns has %d rows, the test %d", len(achReturns), len(wantACH))
	}
	for code := range achReturns {
		if _, ok := wantACH[code]; !ok {
			t.Errorf("achReturns row %q is not tested", code)
		}
	}
	// Every other R-code is unknown.
	for i := 0; i < 100; i++ {
		code := fmt.Sprintf("R%02d", i)
		if _, ok := wantACH[code]; ok {
			continue
		}
		if KnownNetworkCode(ACHStandard, code) {
			t.Errorf("KnownNetworkCode(ach_standard, %q) = true", code)
		}
	}
}

func TestISOReasonCodes(t *testing.T) {
	for _, r := range []Rail{RTP, FedNow} {
		for _, code := range keys(wantISO) {
			checkFailure(t, r, code, wantISO[code])
		}
		for _, code := range keys(wantACH) {
			if KnownNetworkCode(r, code) {
				t.Errorf("KnownNetworkCode(%s, %q) = true", r, code)
			}
			if f := FailureFor(r, code); f.Code != "unknown" {
				t.Errorf("FailureFor(%s, %q).Code = %q, want unknown", r, code, f.Code)
			}
		}
	}
	if len(isoReasons) != len(wantISO) {
		t.Errorf("isoReasons has %d rows, the test %d", len(isoReasons), len(wantISO))
	}
	for code := range isoReasons {
		if _, ok := wantISO[code]; !ok {
			t.Errorf("isoReasons row %q is not tested", code)
		}
	}
}

func TestUnknownNetworkCode(t *testing.T) {
	for _, r := range All {
		for _, code := range []string{"", "R99", "ZZZZ", "r02", "ac04", "X1"} {
			f := FailureFor(r, code)
			if f.Code != "unknown" || f.NetworkCode != code || f.Reason == "" ||
				f.Advice != (RetryAdvice{Action: ActionContactRecipient}) {
				t.Errorf("FailureFor(%s, %q) = %+v, want unknown/contact_recipient", r, code, f)
			}
			if KnownNetworkCode(r, code) {
				t.Errorf("KnownNetworkCode(%s, %q) = true", r, code)
			}
		}
	}
	// The zero Rail never panics either.
	if f := FailureFor(Rail{}, "nope"); f.Code != "unknown" {
		t.Errorf("FailureFor(zero rail) = %+v", f)
	}
}

// API.md §5, "Sandbox magic destination account numbers", row by row.
func TestSandboxMagicNumbers(t *testing.T) {
	type row struct {
		account            string
		ach, rtp, fednow   string // network code per rail; "" = settles
		code, action, rail string
	}
	rows := []row{
		{"4000000002", "R02", "AC04", "AC04", "account_closed", ActionUpdateDestination, ""},
		{"4000000003", "R03", "AC03", "AC03", "no_account", ActionUpdateDestination, ""},
		{"4000000004", "R04", "AC02", "AC02", "invalid_account_number", ActionUpdateDestination, ""},
		{"4000000016", "R16", "AC06", "AC06", "account_frozen", ActionContactRecipient, ""},
		{"4000000023", "R23", "CUST", "CUST", "credit_refused", ActionDoNotRetry, ""},
		{"4000009912", "", "9912", "E997", "network_unavailable", ActionRetryOtherRail, "ach_same_day"},
	}
	for _, x := range rows {
		for _, r := range All {
			want := map[Rail]string{ACHStandard: x.ach, ACHSameDay: x.ach, RTP: x.rtp, FedNow: x.fednow}[r]
			got := SandboxOutcome(r, x.account)
			if got != want {
				t.Errorf("SandboxOutcome(%s, %s) = %q, want %q", r, x.account, got, want)
				continue
			}
			if got == "" {
				continue // succeeds
			}
			f := FailureFor(r, got)
			if f.Code != x.code || f.NetworkCode != got || f.Advice.Action != x.action || f.Advice.SuggestedRail != x.rail {
				t.Errorf("%s on %s: failure %+v, want %s / %s / %q", x.account, r, f, x.code, x.action, x.rail)
			}
		}
	}
	// Ordinary and near-miss numbers settle.
	for _, acct := range []string{"123456789", "4000000001", "4000000005", "400000002", "40000000023", "4000009913", ""} {
		for _, r := range All {
			if got := SandboxOutcome(r, acct); got != "" {
				t.Errorf("SandboxOutcome(%s, %q) = %q, want settle", r, acct, got)
			}
		}
	}
}

// The failure object serializes with API.md's field names.
func TestFailureJSON(t *testing.T) {
	b, err := json.Marshal(FailureFor(RTP, "9912"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	adv, _ := m["retry_recommendation"].(map[string]any)
	if m["code"] != "network_unavailable" || m["network_code"] != "9912" || m["reason"] == "" ||
		adv["action"] != "retry_other_rail" || adv["suggested_rail"] != "ach_same_day" {
		t.Errorf("failure JSON = %s", b)
	}
	if _, ok := adv["retry_after"]; ok {
		t.Errorf("retry_after present without retry_later: %s", b)
	}

	b, _ = json.Marshal(FailureFor(ACHStandard, "R02"))
	_ = json.Unmarshal(b, &m)
	adv, _ = m["retry_recommendation"].(map[string]any)
	if _, ok := adv["suggested_rail"]; ok || adv["action"] != "update_destination" {
		t.Errorf("R02 JSON = %s", b)
	}
}

func TestMaxAmount(t *testing.T) {
	want := map[Rail]int64{
		ACHSameDay:  100000000,  // $1,000,000.00
		RTP:         1000000000, // $10,000,000.00
		FedNow:      1000000000,
		ACHStandard: 9999999999, // $99,999,999.99
	}
	for _, r := range All {
		if got := MaxAmount(r); got != want[r] {
			t.Errorf("MaxAmount(%s) = %d, want %d", r, got, want[r])
		}
	}
	if got := MaxAmount(Rail{}); got != 0 {
		t.Errorf("MaxAmount(zero) = %d, want 0", got)
	}
}

func TestIsInstant(t *testing.T) {
	want := map[Rail]bool{ACHStandard: false, ACHSameDay: false, RTP: true, FedNow: true}
	for _, r := range All {
		if got := IsInstant(r); got != want[r] {
			t.Errorf("IsInstant(%s) = %v", r, got)
		}
	}
}

func TestValidABA(t *testing.T) {
	good := []string{
		"021000021", // JPMorgan Chase
		"011000015", // Federal Reserve Bank of Boston
		"110000000", // common test number
		"026009593", // Bank of America
		"121000248", // Wells Fargo
	}
	for _, s := range good {
		if !ValidABA(s) {
			t.Errorf("ValidABA(%q) = false, want true", s)
		}
	}
	bad := []string{
		"021000022",  // last digit off by one
		"021000012",  // two digits swapped
		"123456789",  // checksum 159
		"110000001",  // checksum 11
		"02100002",   // 8 digits
		"0210000210", // 10 digits
		"02100002a",
		"-21000021",
		" 21000021",
		"021-00-21",
		"",
		"０21000021", // a full-width zero
	}
	for _, s := range bad {
		if ValidABA(s) {
			t.Errorf("ValidABA(%q) = true, want false", s)
		}
	}
}

func TestParseAndFees(t *testing.T) {
	for _, r := range All {
		got, ok := Parse(r.String())
		if !ok || got != r {
			t.Errorf("Parse(%q) = %v, %v", r.String(), got, ok)
		}
	}
	for _, s := range []string{"", "ACH_STANDARD", "wire", "ach", "rtp "} {
		if _, ok := Parse(s); ok {
			t.Errorf("Parse(%q) ok", s)
		}
	}
	want := map[string]int64{"ach_standard": 25, "ach_same_day": 100, "rtp": 50, "fednow": 45}
	got := DefaultFeeSchedule()
	if len(got) != len(want) {
		t.Errorf("DefaultFeeSchedule = %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("DefaultFeeSchedule[%s] = %d, want %d", k, got[k], v)
		}
	}
}
