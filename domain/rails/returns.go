package rails

import (
	"encoding/json"
	"time"
)

// Retry actions a failed payment recommends (API.md §5).
const (
	ActionRetryLater        = "retry_later"
	ActionRetryOtherRail    = "retry_other_rail"
	ActionUpdateDestination = "update_destination"
	ActionContactRecipient  = "contact_recipient"
	ActionDoNotRetry        = "do_not_retry"
)

// RetryAdvice tells the platform what to do about a failure.
type RetryAdvice struct {
	Action        string `json:"action"`
	SuggestedRail string `json:"suggested_rail,omitempty"`
	// RetryAfterSeconds, for retry_later: how many seconds to wait.
	RetryAfterSeconds int `json:"retry_after,omitempty"`
}

// Failure is what a network code means for the platform.
type Failure struct {
	Code        string      `json:"code"`
	NetworkCode string      `json:"network_code"`
	Reason      string      `json:"reason"`
	Advice      RetryAdvice `json:"retry_recommendation"`
}

// MarshalJSON writes an empty NetworkCode as null: a scheduled payment
// a rule refused on its date failed before any network saw it.
func (f Failure) MarshalJSON() ([]byte, error) {
	var networkCode *string
	if f.NetworkCode != "" {
		networkCode = &f.NetworkCode
	}
	return json.Marshal(struct {
		Code        string      `json:"code"`
		NetworkCode *string     `json:"network_code"`
		Reason      string      `json:"reason"`
		Advice      RetryAdvice `json:"retry_recommendation"`
	}{f.Code, networkCode, f.Reason, f.Advice})
}

type failureRow struct {
	code, reason string
	advice       RetryAdvice
}

var (
	updateDestination = RetryAdvice{Action: ActionUpdateDestination}
	contactRecipient  = RetryAdvice{Action: ActionContactRecipient}
	doNotRetry        = RetryAdvice{Action: ActionDoNotRetry}
	retryLater        = RetryAdvice{Action: ActionRetryLater, RetryAfterSeconds: int((24 * time.Hour).Seconds())}
	retryInstantLater = RetryAdvice{Action: ActionRetryLater, RetryAfterSeconds: 300}
)

// achReturns maps NACHA return codes.
var achReturns = map[string]failureRow{
	"R01": {"insufficient_funds", "Insufficient funds in the receiving account", retryLater},
	"R02": {"account_closed", "The receiving account is closed", updateDestination},
	"R03": {"no_account", "No account, or the account cannot be located", updateDestination},
	"R04": {"invalid_account_number", "The account number is not valid", updateDestination},
	"R05": {"unauthorized_debit", "Unauthorized debit to a consumer account", doNotRetry},
	"R06": {"returned_by_odfi", "Returned at the originating bank's request", contactRecipient},
	"R07": {"authorization_revoked", "The customer revoked the authorization", doNotRetry},
	"R08": {"payment_stopped", "The receiver stopped the payment", contactRecipient},
	"R09": {"uncollected_funds", "Uncollected funds", retryLater},
	"R10": {"unauthorized", "The customer says the entry was not authorized", doNotRetry},
	"R11": {"entry_not_per_authorization", "The entry does not match its authorization", contactRecipient},
	"R12": {"account_sold", "The account was sold to another bank", updateDestination},
	"R13": {"invalid_routing_number", "The routing number is not a valid ACH participant", updateDestination},
	"R14": {"recipient_deceased", "The representative payee is deceased", doNotRetry},
	"R15": {"recipient_deceased", "The beneficiary or account holder is deceased", doNotRetry},
	"R16": {"account_frozen", "The receiving account is frozen", contactRecipient},
	"R17": {"file_record_edit_criteria", "The entry could not be processed", contactRecipient},
	"R20": {"non_transaction_account", "The account does not allow this transaction", updateDestination},
	"R23": {"credit_refused", "The receiver refused the credit", doNotRetry},
	"R24": {"duplicate_entry", "The entry is a duplicate", doNotRetry},
	"R29": {"corporate_not_authorized", "The corporate receiver did not authorize the entry", doNotRetry},
}

// isoReasons maps ISO 20022 reason codes used by RTP and FedNow.
var isoReasons = map[string]failureRow{
	"AC02": {"invalid_account_number", "The debtor or creditor account number is invalid", updateDestination},
	"AC03": {"no_account", "The creditor account number is invalid or missing", updateDestination},
	"AC04": {"account_closed", "The account is closed", updateDestination},
	"AC06": {"account_frozen", "The account is blocked", contactRecipient},
	"AC07": {"account_closed", "The creditor account is closed", updateDestination},
	"AG01": {"transaction_forbidden", "The account does not accept this transaction", RetryAdvice{Action: ActionRetryOtherRail, SuggestedRail: "ach_standard"}},
	"AG03": {"transaction_not_supported", "The transaction type is not supported", RetryAdvice{Action: ActionRetryOtherRail, SuggestedRail: "ach_standard"}},
	"AM02": {"amount_exceeds_limit", "The amount exceeds the receiving bank's limit", RetryAdvice{Action: ActionRetryOtherRail, SuggestedRail: "ach_standard"}},
	"AM04": {"insufficient_funds", "Insufficient funds", retryInstantLater},
	"BE04": {"invalid_recipient", "The creditor's address or name is missing or wrong", updateDestination},
	"CUST": {"credit_refused", "The customer refused the payment", doNotRetry},
	"DUPL": {"duplicate_entry", "The payment is a duplicate", doNotRetry},
	"FF01": {"invalid_format", "The payment message is invalid", contactRecipient},
	"MS03": {"not_specified", "The reason was not specified by the receiving bank", retryInstantLater},
	"NARR": {"not_specified", "See the receiving bank's narrative", contactRecipient},
	"RC01": {"invalid_routing_number", "The bank identifier is invalid", updateDestination},
	"9912": {"network_unavailable", "The receiving bank is not available on the network", RetryAdvice{Action: ActionRetryOtherRail, SuggestedRail: "ach_same_day"}},
	"E997": {"network_unavailable", "The receiving bank did not answer in time", RetryAdvice{Action: ActionRetryOtherRail, SuggestedRail: "ach_same_day"}},
}

// FailureFor explains a network code of a rail. An unknown code is
// "unknown" with advice to contact the recipient, never a panic.
func FailureFor(r Rail, networkCode string) Failure {
	table := isoReasons
	if r == ACHStandard || r == ACHSameDay {
		table = achReturns
	}
	row, ok := table[networkCode]
	if !ok {
		row = failureRow{"unknown", "The network returned code " + networkCode, contactRecipient}
	}
	return Failure{Code: row.code, NetworkCode: networkCode, Reason: row.reason, Advice: row.advice}
}

// KnownNetworkCode reports whether a code belongs to the rail's table.
func KnownNetworkCode(r Rail, code string) bool {
	if r == ACHStandard || r == ACHSameDay {
		_, ok := achReturns[code]
		return ok
	}
	_, ok := isoReasons[code]
	return ok
}

// SandboxOutcome is what the sandbox rail does with a destination account
// number (API.md §5's magic numbers): "" means it settles.
func SandboxOutcome(r Rail, accountNumber string) (networkCode string) {
	ach := r == ACHStandard || r == ACHSameDay
	switch accountNumber {
	case "4000000002":
		return pick(ach, "R02", "AC04")
	case "4000000003":
		return pick(ach, "R03", "AC03")
	case "4000000004":
		return pick(ach, "R04", "AC02")
	case "4000000016":
		return pick(ach, "R16", "AC06")
	case "4000000023":
		return pick(ach, "R23", "CUST")
	case "4000009912":
		if r == FedNow {
			return "E997"
		}
		return pick(ach, "", "9912")
	}
	return ""
}

func pick(ach bool, achCode, isoCode string) string {
	if ach {
		return achCode
	}
	return isoCode
}
