package nacha

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseError says which record of a file is wrong and why.
type ParseError struct {
	Line int // 1-based record number
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "nacha: " + e.Msg
	}
	return fmt.Sprintf("nacha: record %d: %s", e.Line, e.Msg)
}

// Parse reads a NACHA file. Records are separated by newlines (LF or CRLF)
// or, as some banks send them, not at all. It checks the records' order,
// every field it reads, and every control: each batch's and the file's
// entry and addenda count, entry hash and totals, the batch count, the
// block count and the padding. The first thing wrong is the error.
func Parse(data []byte) (File, error) {
	recs, err := records(data)
	if err != nil {
		return File{}, err
	}
	p := &parser{recs: recs}
	return p.file()
}

// records cuts data into 94-character records.
func records(data []byte) ([]string, error) {
	if len(data) == 0 {
		return nil, &ParseError{Msg: "empty file"}
	}
	var recs []string
	if bytes.IndexByte(data, '\n') < 0 {
		if len(data)%RecordLength != 0 {
			return nil, &ParseError{Msg: fmt.Sprintf("%d bytes without a newline is not a whole number of %d-character records", len(data), RecordLength)}
		}
		for i := 0; i < len(data); i += RecordLength {
			recs = append(recs, string(data[i:i+RecordLength]))
		}
	} else {
		text := strings.TrimSuffix(string(data), "\n")
		for _, line := range strings.Split(text, "\n") {
			recs = append(recs, strings.TrimSuffix(line, "\r"))
		}
	}
	for i, r := range recs {
		if len(r) != RecordLength {
			return nil, &ParseError{Line: i + 1, Msg: fmt.Sprintf("%d characters, not %d", len(r), RecordLength)}
		}
		for j := 0; j < len(r); j++ {
			if c := r[j]; c < 0x20 || c > 0x7e {
				return nil, &ParseError{Line: i + 1, Msg: fmt.Sprintf("byte 0x%02x at position %d is not printable ASCII", c, j+1)}
			}
		}
	}
	return recs, nil
}

type parser struct {
	recs []string
	i    int // the record being read
	err  *ParseError
}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = &ParseError{Line: p.i + 1, Msg: fmt.Sprintf(format, args...)}
	}
}

// at is the current record's field at 1-based positions from..to.
func (p *parser) at(from, to int) string { return p.recs[p.i][from-1 : to] }

func (p *parser) text(from, to int) string { return strings.TrimRight(p.at(from, to), " ") }

func (p *parser) number(name string, from, to int) int64 {
	s := p.at(from, to)
	if !digits(s) {
		p.fail("%s %q is not digits", name, s)
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func (p *parser) ident(name string, from, to int) string {
	s := p.at(from, to)
	if !digits(s) {
		p.fail("%s %q is not digits", name, s)
	}
	return s
}

func (p *parser) date(name string, from, to int) time.Time {
	s := p.at(from, to)
	t, err := time.Parse("060102", s)
	if err != nil {
		p.fail("%s %q is not a date (YYMMDD)", name, s)
	}
	return t
}

func (p *parser) kind() byte {
	if p.i >= len(p.recs) {
		return 0
	}
	return p.recs[p.i][0]
}

func (p *parser) expect(kind byte, what string) bool {
	if p.i >= len(p.recs) {
		p.err = &ParseError{Line: p.i, Msg: "the file ends before its " + what}
		return false
	}
	if p.kind() != kind {
		p.fail("a record %c where the %s (%c) belongs", p.kind(), what, kind)
		return false
	}
	return true
}

func (p *parser) file() (File, error) {
	var f File
	if !p.expect('1', "file header") {
		return f, p.err
	}
	f.Header = p.fileHeader()
	p.i++
	for p.err == nil && p.kind() == '5' {
		f.Batches = append(f.Batches, p.batch())
	}
	if p.err != nil {
		return File{}, p.err
	}
	if !p.expect('9', "file control") {
		return File{}, p.err
	}
	p.fileControl(f)
	p.i++
	p.padding(f)
	if p.err != nil {
		return File{}, p.err
	}
	return f, nil
}

func (p *parser) fileHeader() FileHeader {
	if p.at(2, 3) != "01" {
		p.fail("priority code %q is not 01", p.at(2, 3))
	}
	if p.at(35, 40) != "094101" {
		p.fail("record size, blocking factor and format code %q are not 094, 10 and 1", p.at(35, 40))
	}
	h := FileHeader{
		ImmediateDestination: routingOrRaw(p.at(4, 13)),
		ImmediateOrigin:      routingOrRaw(p.at(14, 23)),
		IDModifier:           p.at(34, 34)[0],
		DestinationName:      p.text(41, 63),
		OriginName:           p.text(64, 86),
		ReferenceCode:        p.text(87, 94),
	}
	created, err := time.Parse("0601021504", p.at(24, 33))
	if err != nil {
		p.fail("file creation date and time %q are not YYMMDDHHMM", p.at(24, 33))
	}
	h.CreatedAt = created
	if !validModifier(h.IDModifier) {
		p.fail("file id modifier %q is not A–Z or 0–9", h.IDModifier)
	}
	return h
}

// routingOrRaw is a 9-digit routing number written with its leading
// space, or the field as it is.
func routingOrRaw(field string) string {
	if field[0] == ' ' && digits(field[1:]) {
		return field[1:]
	}
	return field
}

func (p *parser) batch() Batch {
	b := Batch{Header: BatchHeader{
		ServiceClass:         int(p.number("service class code", 2, 4)),
		CompanyName:          p.text(5, 20),
		CompanyDiscretionary: p.text(21, 40),
		CompanyID:            p.text(41, 50),
		SEC:                  p.text(51, 53),
		EntryDescription:     p.text(54, 63),
		DescriptiveDate:      p.text(64, 69),
		EffectiveDate:        p.date("effective entry date", 70, 75),
		SettlementDate:       p.text(76, 78),
		OriginatorStatus:     p.at(79, 79)[0],
		ODFI:                 p.ident("originating DFI", 80, 87),
		Number:               int(p.number("batch number", 88, 94)),
	}}
	switch b.Header.ServiceClass {
	case MixedDebitsAndCredits, CreditsOnly, DebitsOnly:
	default:
		p.fail("service class code %d is not 200, 220 or 225", b.Header.ServiceClass)
	}
	p.i++
	for p.err == nil && p.kind() == '6' {
		b.Entries = append(b.Entries, p.entry(b.Header.ServiceClass))
	}
	if p.err != nil || !p.expect('8', "batch control") {
		return b
	}
	p.batchControl(b)
	p.i++
	return b
}

func (p *parser) entry(serviceClass int) Entry {
	e := Entry{
		TransactionCode:      int(p.number("transaction code", 2, 3)),
		RDFI:                 p.ident("receiving DFI", 4, 11),
		CheckDigit:           p.ident("check digit", 12, 12)[0],
		AccountNumber:        p.text(13, 29),
		Amount:               p.number("amount", 30, 39),
		IdentificationNumber: p.text(40, 54),
		Name:                 p.text(55, 76),
		Discretionary:        p.text(77, 78),
		TraceNumber:          p.ident("trace number", 80, 94),
	}
	switch {
	case !IsCredit(e.TransactionCode) && !IsDebit(e.TransactionCode):
		p.fail("transaction code %d is not one this package knows", e.TransactionCode)
	case serviceClass == CreditsOnly && !IsCredit(e.TransactionCode),
		serviceClass == DebitsOnly && !IsDebit(e.TransactionCode):
		p.fail("transaction code %d in a batch of service class %d", e.TransactionCode, serviceClass)
	}
	indicator := p.at(79, 79)
	if indicator != "0" && indicator != "1" {
		p.fail("addenda record indicator %q is not 0 or 1", indicator)
	}
	p.i++
	if indicator == "1" && p.err == nil && p.expect('7', "addenda the entry announces") {
		a := p.addenda()
		e.Addenda = &a
		p.i++
	}
	if p.err == nil && p.kind() == '7' {
		p.fail("an addenda record its entry does not announce, or a second one")
	}
	return e
}

func (p *parser) addenda() Addenda {
	a := Addenda{Type: p.at(2, 3)}
	switch a.Type {
	case AddendaPayment:
		a.Information = p.text(4, 83)
		a.Sequence = int(p.number("addenda sequence number", 84, 87))
		a.TraceNumber = p.ident("entry detail sequence number", 88, 94)
	case AddendaReturn:
		a.Code = p.text(4, 6)
		a.OriginalTrace = p.ident("original trace number", 7, 21)
		a.DateOfDeath = p.text(22, 27)
		a.OriginalRDFI = p.ident("original receiving DFI", 28, 35)
		a.Information = p.text(36, 79)
		a.TraceNumber = p.ident("trace number", 80, 94)
	case AddendaNOC:
		a.Code = p.text(4, 6)
		a.OriginalTrace = p.ident("original trace number", 7, 21)
		a.OriginalRDFI = p.ident("original receiving DFI", 28, 35)
		a.CorrectedData = p.text(36, 64)
		a.TraceNumber = p.ident("trace number", 80, 94)
	default:
		p.fail("addenda type %q is not 05, 98 or 99", a.Type)
	}
	return a
}

// checkControl compares what a control record says with what its entries add up to.
func (p *parser) checkControl(what string, said, computed Control) {
	switch {
	case said.EntryAddendaCount != computed.EntryAddendaCount:
		p.fail("%s says %d entries and addenda; there are %d", what, said.EntryAddendaCount, computed.EntryAddendaCount)
	case said.EntryHash != computed.EntryHash:
		p.fail("%s says entry hash %d; the entries make %d", what, said.EntryHash, computed.EntryHash)
	case said.TotalDebit != computed.TotalDebit:
		p.fail("%s says %d cents of debits; the entries make %d", what, said.TotalDebit, computed.TotalDebit)
	case said.TotalCredit != computed.TotalCredit:
		p.fail("%s says %d cents of credits; the entries make %d", what, said.TotalCredit, computed.TotalCredit)
	}
}

func (p *parser) batchControl(b Batch) {
	said := Control{
		EntryAddendaCount: int(p.number("entry/addenda count", 5, 10)),
		EntryHash:         p.number("entry hash", 11, 20),
		TotalDebit:        p.number("total debit", 21, 32),
		TotalCredit:       p.number("total credit", 33, 44),
	}
	if sc := int(p.number("service class code", 2, 4)); sc != b.Header.ServiceClass {
		p.fail("batch control's service class %d is not its header's %d", sc, b.Header.ServiceClass)
	}
	if n := int(p.number("batch number", 88, 94)); n != b.Header.Number {
		p.fail("batch control's number %d is not its header's %d", n, b.Header.Number)
	}
	p.checkControl(fmt.Sprintf("batch %d's control", b.Header.Number), said, b.Control())
}

func (p *parser) fileControl(f File) {
	if n := int(p.number("batch count", 2, 7)); n != len(f.Batches) {
		p.fail("file control says %d batches; there are %d", n, len(f.Batches))
	}
	if n := int(p.number("block count", 8, 13)); n != f.Blocks() {
		p.fail("file control says %d blocks; the records make %d", n, f.Blocks())
	}
	said := Control{
		EntryAddendaCount: int(p.number("entry/addenda count", 14, 21)),
		EntryHash:         p.number("entry hash", 22, 31),
		TotalDebit:        p.number("total debit", 32, 43),
		TotalCredit:       p.number("total credit", 44, 55),
	}
	p.checkControl("the file control", said, f.Control())
}

// padding checks that only lines of nines follow the file control, up to
// a whole block (a file without them is read too: some banks leave them out).
func (p *parser) padding(f File) {
	nines := strings.Repeat("9", RecordLength)
	for ; p.err == nil && p.i < len(p.recs); p.i++ {
		if p.recs[p.i] != nines {
			p.fail("after the file control, a record that is not a line of nines")
		}
	}
	if p.err == nil && len(p.recs) > f.Blocks()*BlockingFactor {
		p.err = &ParseError{Msg: fmt.Sprintf("%d records: more than the %d blocks the file control says", len(p.recs), f.Blocks())}
	}
}
