// Package nacha writes and reads ACH files in the NACHA format: 94-character
// records (1 file header, 5 batch header, 6 entry, 7 addenda, 8 batch
// control, 9 file control), blocked by tens with lines of nines.
//
// It knows the format, not the bank: which payments go in a file, their
// trace numbers and the file's names are the connector's. Write computes
// every count, hash and total; Parse checks every one of them, so a file
// that reads is one whose controls agree with its entries.
package nacha

import (
	"fmt"
	"strconv"
	"time"
)

// RecordLength is the length of every record; BlockingFactor the records
// per block.
const (
	RecordLength   = 94
	BlockingFactor = 10
)

// Service class codes of a batch.
const (
	MixedDebitsAndCredits = 200
	CreditsOnly           = 220
	DebitsOnly            = 225
)

// Transaction codes of an entry.
const (
	CheckingReturn      = 21 // automated return or notification of change of a checking credit
	CheckingCredit      = 22
	CheckingPrenote     = 23
	CheckingDebit       = 27
	SavingsReturn       = 31
	SavingsCredit       = 32
	SavingsPrenote      = 33
	SavingsDebit        = 37
	CheckingDebitReturn = 26
	SavingsDebitReturn  = 36
)

// IsCredit says whether a transaction code moves money to the receiver
// (credits, their prenotes and the returns of debits).
func IsCredit(code int) bool {
	switch code {
	case 21, 22, 23, 24, 31, 32, 33, 34, 41, 42, 43, 44, 51, 52, 53, 54:
		return true
	}
	return false
}

// IsDebit says whether a transaction code takes money from the receiver.
func IsDebit(code int) bool {
	switch code {
	case 26, 27, 28, 29, 36, 37, 38, 39, 46, 47, 48, 49, 55, 56:
		return true
	}
	return false
}

// ServiceClassOf is the service class a batch of these entries takes:
// credits only, debits only, or mixed.
func ServiceClassOf(entries []Entry) int {
	credits, debits := false, false
	for _, e := range entries {
		credits = credits || IsCredit(e.TransactionCode)
		debits = debits || IsDebit(e.TransactionCode)
	}
	switch {
	case credits && debits:
		return MixedDebitsAndCredits
	case debits:
		return DebitsOnly
	}
	return CreditsOnly
}

// Addenda type codes.
const (
	AddendaPayment = "05" // payment related information
	AddendaNOC     = "98" // notification of change
	AddendaReturn  = "99" // return
)

// File is one NACHA file.
type File struct {
	Header  FileHeader
	Batches []Batch
}

// FileHeader is the file's record 1.
type FileHeader struct {
	// ImmediateDestination and ImmediateOrigin are 10 characters; a
	// 9-digit routing number is written with a leading space.
	ImmediateDestination string
	ImmediateOrigin      string
	// CreatedAt is written as YYMMDD and HHMM, as given (the caller picks
	// the zone: the bank's, Eastern).
	CreatedAt       time.Time
	IDModifier      byte // A–Z or 0–9: files of one day and origin differ by it
	DestinationName string
	OriginName      string
	ReferenceCode   string
}

// Batch is a batch header, its entries and (computed) its control.
type Batch struct {
	Header  BatchHeader
	Entries []Entry
}

// BatchHeader is a batch's record 5.
type BatchHeader struct {
	ServiceClass         int
	CompanyName          string
	CompanyDiscretionary string
	CompanyID            string
	SEC                  string // CCD, PPD, …
	EntryDescription     string
	DescriptiveDate      string
	// EffectiveDate is the date the originator asks the entries to settle.
	EffectiveDate time.Time
	// SettlementDate is the Julian day the ACH operator fills in: blank in
	// an outbound file, three digits in what comes back.
	SettlementDate   string
	OriginatorStatus byte // '1': a depository financial institution
	ODFI             string
	Number           int
}

// Entry is a record 6 and its addenda record, if any.
type Entry struct {
	TransactionCode int
	// RDFI is the first 8 digits of the receiver's routing number,
	// CheckDigit its ninth (SplitRouting).
	RDFI          string
	CheckDigit    byte
	AccountNumber string
	Amount        int64 // cents
	// IdentificationNumber is the originator's reference for the entry (15
	// characters).
	IdentificationNumber string
	Name                 string
	Discretionary        string
	TraceNumber          string
	Addenda              *Addenda
}

// Addenda is a record 7: payment information (05), a notification of
// change (98) or a return (99). Which fields a type uses is said beside
// each.
type Addenda struct {
	Type string
	// Code is the return reason (R01…, 99) or the change code (C01…, 98).
	Code string
	// OriginalTrace is the trace number of the entry returned or
	// corrected (98, 99).
	OriginalTrace string
	DateOfDeath   string // YYMMDD or blank (99)
	OriginalRDFI  string // 8 digits (98, 99)
	// CorrectedData is what the receiving bank says to use instead (98).
	CorrectedData string
	// Information is the addenda information (99: 44 characters) or the
	// payment related information (05: 80 characters).
	Information string
	// Sequence is the addenda's sequence number (05).
	Sequence int
	// TraceNumber is the addenda's own trace number (98, 99), or its
	// entry detail sequence number (05: 7 digits; left empty, Marshal
	// writes the entry's trace number's last seven).
	TraceNumber string
}

// SplitRouting splits a 9-digit routing number into the RDFI
// identification (8 digits) and its check digit.
func SplitRouting(routing string) (rdfi string, check byte, err error) {
	if len(routing) != 9 || !digits(routing) {
		return "", 0, fmt.Errorf("routing number %q: 9 digits expected", routing)
	}
	return routing[:8], routing[8], nil
}

// CheckDigit is the ABA check digit of the first 8 digits of a routing
// number.
func CheckDigit(rdfi string) byte {
	weights := [8]int{3, 7, 1, 3, 7, 1, 3, 7}
	sum := 0
	for i := 0; i < 8 && i < len(rdfi); i++ {
		sum += int(rdfi[i]-'0') * weights[i]
	}
	return byte('0' + (10-sum%10)%10)
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Control is what a batch or file control record says of its entries.
type Control struct {
	EntryAddendaCount int
	EntryHash         int64 // the sum of the RDFI fields, its last 10 digits
	TotalDebit        int64 // cents
	TotalCredit       int64
}

// Control computes the batch's control figures.
func (b Batch) Control() Control {
	var c Control
	for _, e := range b.Entries {
		c.EntryAddendaCount++
		if e.Addenda != nil {
			c.EntryAddendaCount++
		}
		rdfi, _ := strconv.ParseInt(e.RDFI, 10, 64) // Marshal refuses an RDFI that is not 8 digits
		c.EntryHash = (c.EntryHash + rdfi) % 1e10
		switch {
		case IsDebit(e.TransactionCode):
			c.TotalDebit += e.Amount
		case IsCredit(e.TransactionCode):
			c.TotalCredit += e.Amount
		}
	}
	return c
}

// Control computes the file's control figures.
func (f File) Control() Control {
	var c Control
	for _, b := range f.Batches {
		bc := b.Control()
		c.EntryAddendaCount += bc.EntryAddendaCount
		c.EntryHash = (c.EntryHash + bc.EntryHash) % 1e10
		c.TotalDebit += bc.TotalDebit
		c.TotalCredit += bc.TotalCredit
	}
	return c
}

// Records counts the file's records before blocking.
func (f File) Records() int {
	n := 2 // header and control
	for _, b := range f.Batches {
		n += 2 + b.Control().EntryAddendaCount
	}
	return n
}

// Blocks counts the file's blocks of BlockingFactor records.
func (f File) Blocks() int {
	return (f.Records() + BlockingFactor - 1) / BlockingFactor
}
