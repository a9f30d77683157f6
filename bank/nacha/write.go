package nacha

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Marshal writes f as a NACHA file: its records, each followed by a
// newline, then lines of nines up to a whole block. It computes the
// controls, and refuses (writing nothing) a field that does not fit its
// place: a value too long, a letter where digits go, a character outside
// printable ASCII. It truncates nothing; shortening a name is the
// caller's decision.
func Marshal(f File) ([]byte, error) {
	w := &writer{}
	w.fileHeader(f.Header)
	for i, b := range f.Batches {
		w.at = fmt.Sprintf("batch %d", i+1)
		w.batch(b)
	}
	w.at = "file control"
	c := f.Control()
	w.record('9', num(len(f.Batches), 6), num(f.Blocks(), 6), num(c.EntryAddendaCount, 8),
		num64(c.EntryHash, 10), num64(c.TotalDebit, 12), num64(c.TotalCredit, 12), blank(39))
	for w.records%BlockingFactor != 0 {
		w.buf.WriteString(strings.Repeat("9", RecordLength) + "\n")
		w.records++
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.buf.Bytes(), nil
}

type writer struct {
	buf     bytes.Buffer
	records int
	at      string // where the record being written is, for errors
	err     error  // the first field refused
}

// field is one field's value and how to write it.
type field struct {
	name  string
	value string
	width int
	kind  fieldKind
}

type fieldKind int

const (
	alphanumeric fieldKind = iota // left-justified, space-filled, printable ASCII
	numeric                       // right-justified, zero-filled, digits only
	identifier                    // digits, exactly as wide as the field
)

func alpha(name, value string, width int) field { return field{name, value, width, alphanumeric} }
func ident(name, value string, width int) field { return field{name, value, width, identifier} }
func num(n, width int) field                    { return num64(int64(n), width) }
func num64(n int64, width int) field {
	return field{"", strconv.FormatInt(n, 10), width, numeric}
}
func blank(width int) field { return field{"", "", width, alphanumeric} }

// refuse records the first field that cannot be written.
func (w *writer) refuse(name, value, why string) {
	if w.err == nil {
		w.err = fmt.Errorf("nacha: %s: %s %q %s", w.at, name, value, why)
	}
}

func (w *writer) record(kind byte, fields ...field) {
	line := make([]byte, 0, RecordLength)
	line = append(line, kind)
	for _, f := range fields {
		line = append(line, w.format(f)...)
	}
	if len(line) != RecordLength && w.err == nil {
		w.err = fmt.Errorf("nacha: %s: record %c is %d characters, not %d", w.at, kind, len(line), RecordLength)
	}
	w.buf.Write(line)
	w.buf.WriteByte('\n')
	w.records++
}

func (w *writer) format(f field) string {
	fail := func(why string) string {
		w.refuse(f.name, f.value, why)
		return strings.Repeat(" ", f.width)
	}
	if len(f.value) > f.width {
		return fail(fmt.Sprintf("is longer than its %d characters", f.width))
	}
	switch f.kind {
	case identifier:
		if len(f.value) != f.width || !digits(f.value) {
			return fail(fmt.Sprintf("is not %d digits", f.width))
		}
		return f.value
	case numeric:
		if f.value == "" || !digits(f.value) {
			return fail("is not digits")
		}
		return strings.Repeat("0", f.width-len(f.value)) + f.value
	}
	for i := 0; i < len(f.value); i++ {
		if c := f.value[i]; c < 0x20 || c > 0x7e {
			return fail("has a character a NACHA file cannot carry")
		}
	}
	return f.value + strings.Repeat(" ", f.width-len(f.value))
}

func (w *writer) fileHeader(h FileHeader) {
	w.at = "file header"
	if !validModifier(h.IDModifier) {
		w.refuse("file id modifier", string(h.IDModifier), "is not A–Z or 0–9")
	}
	if len(h.ImmediateDestination) != 10 && !(len(h.ImmediateDestination) == 9 && digits(h.ImmediateDestination)) {
		w.refuse("immediate destination", h.ImmediateDestination, "is neither 10 characters nor a 9-digit routing number")
	}
	if len(h.ImmediateOrigin) != 10 && !(len(h.ImmediateOrigin) == 9 && digits(h.ImmediateOrigin)) {
		w.refuse("immediate origin", h.ImmediateOrigin, "is neither 10 characters nor a 9-digit routing number")
	}
	w.record('1', ident("priority code", "01", 2),
		alpha("immediate destination", routingField(h.ImmediateDestination), 10),
		alpha("immediate origin", routingField(h.ImmediateOrigin), 10),
		ident("file creation date", h.CreatedAt.Format("060102"), 6),
		ident("file creation time", h.CreatedAt.Format("1504"), 4),
		alpha("file id modifier", string(h.IDModifier), 1),
		ident("record size", "094", 3), ident("blocking factor", "10", 2),
		ident("format code", "1", 1),
		alpha("immediate destination name", h.DestinationName, 23),
		alpha("immediate origin name", h.OriginName, 23),
		alpha("reference code", h.ReferenceCode, 8))
}

// routingField writes a 9-digit routing number with its leading space.
func routingField(s string) string {
	if len(s) == 9 && digits(s) {
		return " " + s
	}
	return s
}

func validModifier(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (w *writer) batch(b Batch) {
	h := b.Header
	status := h.OriginatorStatus
	if status == 0 {
		status = '1'
	}
	w.record('5', num(h.ServiceClass, 3),
		alpha("company name", h.CompanyName, 16),
		alpha("company discretionary data", h.CompanyDiscretionary, 20),
		alpha("company identification", h.CompanyID, 10),
		alpha("standard entry class", h.SEC, 3),
		alpha("company entry description", h.EntryDescription, 10),
		alpha("company descriptive date", h.DescriptiveDate, 6),
		ident("effective entry date", h.EffectiveDate.Format("060102"), 6),
		alpha("settlement date", h.SettlementDate, 3),
		alpha("originator status code", string(status), 1),
		ident("originating DFI", h.ODFI, 8),
		num(h.Number, 7))
	for i, e := range b.Entries {
		w.at = fmt.Sprintf("batch %d entry %d", h.Number, i+1)
		w.entry(e, h.ServiceClass)
	}
	w.at = fmt.Sprintf("batch %d control", h.Number)
	c := b.Control()
	w.record('8', num(h.ServiceClass, 3), num(c.EntryAddendaCount, 6), num64(c.EntryHash, 10),
		num64(c.TotalDebit, 12), num64(c.TotalCredit, 12),
		alpha("company identification", h.CompanyID, 10),
		blank(19), blank(6), // message authentication code, reserved
		ident("originating DFI", h.ODFI, 8), num(h.Number, 7))
}

func (w *writer) entry(e Entry, serviceClass int) {
	if e.Amount < 0 {
		w.refuse("amount", strconv.FormatInt(e.Amount, 10), "is negative")
	}
	switch {
	case serviceClass == CreditsOnly && !IsCredit(e.TransactionCode),
		serviceClass == DebitsOnly && !IsDebit(e.TransactionCode):
		w.refuse("transaction code", strconv.Itoa(e.TransactionCode), fmt.Sprintf("does not belong in service class %d", serviceClass))
	case !IsCredit(e.TransactionCode) && !IsDebit(e.TransactionCode):
		w.refuse("transaction code", strconv.Itoa(e.TransactionCode), "is not a code this package knows")
	}
	indicator := "0"
	if e.Addenda != nil {
		indicator = "1"
	}
	w.record('6', num(e.TransactionCode, 2),
		ident("receiving DFI", e.RDFI, 8),
		ident("check digit", string(e.CheckDigit), 1),
		alpha("DFI account number", e.AccountNumber, 17),
		num64(e.Amount, 10),
		alpha("identification number", e.IdentificationNumber, 15),
		alpha("receiver name", e.Name, 22),
		alpha("discretionary data", e.Discretionary, 2),
		ident("addenda record indicator", indicator, 1),
		ident("trace number", e.TraceNumber, 15))
	if a := e.Addenda; a != nil {
		w.addenda(*a, e.TraceNumber)
	}
}

func (w *writer) addenda(a Addenda, entryTrace string) {
	switch a.Type {
	case AddendaPayment:
		seq := a.TraceNumber // the entry's sequence number: its trace number's last seven digits
		if seq == "" && len(entryTrace) == 15 {
			seq = entryTrace[8:]
		}
		w.record('7', alpha("addenda type", a.Type, 2),
			alpha("payment related information", a.Information, 80),
			num(a.Sequence, 4), ident("entry detail sequence number", seq, 7))
	case AddendaReturn:
		w.record('7', alpha("addenda type", a.Type, 2),
			alpha("return reason code", a.Code, 3),
			ident("original trace number", a.OriginalTrace, 15),
			alpha("date of death", a.DateOfDeath, 6),
			ident("original receiving DFI", a.OriginalRDFI, 8),
			alpha("addenda information", a.Information, 44),
			ident("trace number", a.TraceNumber, 15))
	case AddendaNOC:
		w.record('7', alpha("addenda type", a.Type, 2),
			alpha("change code", a.Code, 3),
			ident("original trace number", a.OriginalTrace, 15),
			blank(6),
			ident("original receiving DFI", a.OriginalRDFI, 8),
			alpha("corrected data", a.CorrectedData, 29),
			blank(15),
			ident("trace number", a.TraceNumber, 15))
	default:
		w.refuse("addenda type", a.Type, "is not 05, 98 or 99")
	}
}
