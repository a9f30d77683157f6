package nacha

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files from Marshal's output")

func date(s string) time.Time {
	t, err := time.Parse("0601021504", s)
	if err != nil {
		panic(err)
	}
	return t
}

// outbound is a file as the connector cuts one: a credits-only CCD batch
// per platform.
func outbound() File {
	return File{
		Header: FileHeader{ImmediateDestination: "021000021", ImmediateOrigin: "1234567890",
			CreatedAt: date("2611271030"), IDModifier: 'A', DestinationName: "SPONSOR BANK",
			OriginName: "TREASURY", ReferenceCode: ""},
		Batches: []Batch{
			{Header: BatchHeader{ServiceClass: CreditsOnly, CompanyName: "ACME PAYROLL", CompanyID: "1234567890",
				SEC: "CCD", EntryDescription: "PAYMENT", DescriptiveDate: "SD1030", EffectiveDate: date("2611270000"),
				ODFI: "02100002", Number: 1},
				Entries: []Entry{
					{TransactionCode: CheckingCredit, RDFI: "01100001", CheckDigit: '5', AccountNumber: "000123456789",
						Amount: 125000, IdentificationNumber: "pay_01JXYZ", Name: "JANE DOE LLC", TraceNumber: "021000020000001"},
					{TransactionCode: CheckingCredit, RDFI: "02600959", CheckDigit: '3', AccountNumber: "98765",
						Amount: 1, IdentificationNumber: "pay_01JXZA", Name: "A VERY LONG BUSINESS N", TraceNumber: "021000020000002"},
					{TransactionCode: CheckingCredit, RDFI: "12100024", CheckDigit: '8', AccountNumber: "42",
						Amount: 5000, IdentificationNumber: "pay_01JXZC", Name: "GAMMA CO", TraceNumber: "021000020000004"},
				}},
			{Header: BatchHeader{ServiceClass: CreditsOnly, CompanyName: "BETA INVOICING", CompanyID: "1234567890",
				SEC: "CCD", EntryDescription: "PAYMENT", EffectiveDate: date("2611300000"), ODFI: "02100002", Number: 2},
				Entries: []Entry{
					{TransactionCode: SavingsCredit, RDFI: "99999999", CheckDigit: '2', AccountNumber: "55555555555555555",
						Amount: 9999999999, IdentificationNumber: "pay_01JXZB", Name: "ROE & SONS, INC.", TraceNumber: "021000020000003",
						Addenda: &Addenda{Type: AddendaPayment, Information: "INVOICE 42", Sequence: 1}},
				}},
		},
	}
}

// returns is what a bank sends back: a return and a notification of change.
func returns() File {
	return File{
		Header: FileHeader{ImmediateDestination: "1234567890", ImmediateOrigin: "021000021",
			CreatedAt: date("2611280600"), IDModifier: '1', DestinationName: "TREASURY", OriginName: "SPONSOR BANK"},
		Batches: []Batch{
			{Header: BatchHeader{ServiceClass: MixedDebitsAndCredits, CompanyName: "ACME PAYROLL", CompanyID: "1234567890",
				SEC: "CCD", EntryDescription: "PAYMENT", EffectiveDate: date("2611270000"), SettlementDate: "331",
				OriginatorStatus: '1', ODFI: "01100001", Number: 1},
				Entries: []Entry{
					{TransactionCode: CheckingReturn, RDFI: "02100002", CheckDigit: '1', AccountNumber: "000123456789",
						Amount: 125000, IdentificationNumber: "pay_01JXYZ", Name: "JANE DOE LLC", TraceNumber: "011000010000001",
						Addenda: &Addenda{Type: AddendaReturn, Code: "R03", OriginalTrace: "021000020000001", OriginalRDFI: "01100001",
							Information: "NO ACCOUNT", TraceNumber: "011000010000001"}},
				}},
			{Header: BatchHeader{ServiceClass: CreditsOnly, CompanyName: "ACME PAYROLL", CompanyID: "1234567890",
				SEC: "COR", EntryDescription: "PAYMENT", EffectiveDate: date("2611270000"), SettlementDate: "331",
				OriginatorStatus: '1', ODFI: "01100001", Number: 2},
				Entries: []Entry{
					{TransactionCode: CheckingReturn, RDFI: "02100002", CheckDigit: '1', AccountNumber: "98765",
						IdentificationNumber: "pay_01JXZA", Name: "A VERY LONG BUSINESS N", TraceNumber: "011000010000002",
						Addenda: &Addenda{Type: AddendaNOC, Code: "C01", OriginalTrace: "021000020000002", OriginalRDFI: "02600959",
							CorrectedData: "1918171614", TraceNumber: "011000010000002"}},
				}},
		},
	}
}

func TestMarshalWritesTheGoldenFiles(t *testing.T) {
	for name, f := range map[string]File{"outbound.ach": outbound(), "returns.ach": returns()} {
		t.Run(name, func(t *testing.T) {
			got, err := Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Marshal differs from %s:\n%s", path, got)
			}
		})
	}
}

// TestTheGoldenFileReadByHand reads outbound.ach by position, with none of
// the package's code, and checks what a bank checks: record lengths,
// blocking, the order of records, counts, entry hashes and totals.
func TestTheGoldenFileReadByHand(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "outbound.ach"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines)%10 != 0 {
		t.Fatalf("%d lines: not whole blocks of 10", len(lines))
	}
	atoi := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return n
	}
	var kinds string
	var batchEntries, fileEntries, batches int64
	var batchHash, fileHash, batchCredit, fileCredit int64
	for i, l := range lines {
		if len(l) != 94 {
			t.Fatalf("line %d has %d characters", i+1, len(l))
		}
		kinds += l[:1]
		switch l[0] {
		case '1':
			if l[3:13] != " 021000021" || l[13:23] != "1234567890" || l[23:33] != "2611271030" || l[33] != 'A' || l[34:40] != "094101" {
				t.Errorf("file header: %q", l)
			}
		case '5':
			batches++
			batchEntries, batchHash, batchCredit = 0, 0, 0
			if l[1:4] != "220" || l[50:53] != "CCD" || strings.TrimSpace(l[53:63]) != "PAYMENT" || l[87:94] != "000000"+strconv.FormatInt(batches, 10) {
				t.Errorf("batch header: %q", l)
			}
		case '6':
			batchEntries++
			batchHash += atoi(l[3:11])
			batchCredit += atoi(l[29:39])
			if l[1:3] != "22" && l[1:3] != "32" {
				t.Errorf("entry: transaction code %q", l[1:3])
			}
		case '7':
			batchEntries++
		case '8':
			if atoi(l[4:10]) != batchEntries || atoi(l[10:20]) != batchHash%1e10 || atoi(l[20:32]) != 0 || atoi(l[32:44]) != batchCredit {
				t.Errorf("batch control %q: counted %d entries and addenda, hash %d, credits %d", l, batchEntries, batchHash, batchCredit)
			}
			fileEntries += batchEntries
			fileHash += batchHash
			fileCredit += batchCredit
		case '9':
			if l == strings.Repeat("9", 94) {
				continue
			}
			if atoi(l[1:7]) != batches || atoi(l[7:13]) != int64(len(lines)/10) || atoi(l[13:21]) != fileEntries ||
				atoi(l[21:31]) != fileHash%1e10 || atoi(l[43:55]) != fileCredit {
				t.Errorf("file control %q", l)
			}
		}
	}
	if want := "15666856789"; kinds != want+strings.Repeat("9", len(kinds)-len(want)) {
		t.Errorf("record kinds %s", kinds)
	}
	if fileCredit != 125000+1+5000+9999999999 {
		t.Errorf("credits %d", fileCredit)
	}
}

func TestParseReadsWhatMarshalWrote(t *testing.T) {
	for name, f := range map[string]File{"outbound": outbound(), "returns": returns()} {
		t.Run(name, func(t *testing.T) {
			data, err := Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			for form, input := range map[string][]byte{
				"newlines": data,
				"crlf":     bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")),
				"unbroken": bytes.ReplaceAll(data, []byte("\n"), nil),
			} {
				got, err := Parse(input)
				if err != nil {
					t.Fatalf("%s: %v", form, err)
				}
				if !reflect.DeepEqual(strip(got), strip(f)) {
					t.Errorf("%s: Parse(Marshal(f)) = %+v, want %+v", form, got, f)
				}
			}
		})
	}
}

// strip drops what Marshal fills in (an 05 addenda's sequence number from
// its entry, the originator status) so that a file and its round trip
// compare.
func strip(f File) File {
	out := f
	out.Batches = nil
	for _, b := range f.Batches {
		nb := b
		nb.Entries = nil
		if nb.Header.OriginatorStatus == 0 {
			nb.Header.OriginatorStatus = '1'
		}
		for _, e := range b.Entries {
			if e.Addenda != nil && e.Addenda.Type == AddendaPayment {
				a := *e.Addenda
				a.TraceNumber = ""
				e.Addenda = &a
			}
			nb.Entries = append(nb.Entries, e)
		}
		out.Batches = append(out.Batches, nb)
	}
	return out
}

func TestMarshalRefusesWhatDoesNotFit(t *testing.T) {
	cases := []struct {
		name   string
		change func(f *File)
		want   string
	}{
		{"a name longer than its field", func(f *File) { f.Batches[0].Entries[0].Name = strings.Repeat("X", 23) }, "receiver name"},
		{"a negative amount", func(f *File) { f.Batches[0].Entries[0].Amount = -1 }, "is negative"},
		{"an amount of 11 digits", func(f *File) { f.Batches[0].Entries[0].Amount = 1e10 }, "longer than its 10"},
		{"a short RDFI", func(f *File) { f.Batches[0].Entries[0].RDFI = "1100001" }, "receiving DFI"},
		{"a letter in a trace number", func(f *File) { f.Batches[0].Entries[0].TraceNumber = "02100002000000X" }, "trace number"},
		{"a debit in a credits-only batch", func(f *File) { f.Batches[0].Entries[0].TransactionCode = CheckingDebit }, "service class 220"},
		{"an unknown transaction code", func(f *File) { f.Batches[0].Entries[0].TransactionCode = 99 }, "transaction code"},
		{"a lower-case file id modifier", func(f *File) { f.Header.IDModifier = 'a' }, "file id modifier"},
		{"a newline in a name", func(f *File) { f.Batches[0].Entries[0].Name = "A\nB" }, "cannot carry"},
		{"a non-ASCII name", func(f *File) { f.Batches[0].Entries[0].Name = "JOSÉ" }, "cannot carry"},
		{"a short immediate origin", func(f *File) { f.Header.ImmediateOrigin = "12345" }, "immediate origin"},
		{"an unknown addenda type", func(f *File) { f.Batches[0].Entries[0].Addenda = &Addenda{Type: "02"} }, "addenda type"},
		{"a missing check digit", func(f *File) { f.Batches[0].Entries[0].CheckDigit = 0 }, "check digit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := outbound()
			c.change(&f)
			out, err := Marshal(f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Marshal = %v, want an error naming %q", err, c.want)
			}
			if out != nil {
				t.Error("Marshal wrote something despite the error")
			}
		})
	}
}

// corrupt changes line n (1-based) of a marshalled file at 1-based
// positions from.. to the text.
func corrupt(t *testing.T, data []byte, n, from int, text string) []byte {
	t.Helper()
	lines := strings.Split(string(data), "\n")
	l := lines[n-1]
	lines[n-1] = l[:from-1] + text + l[from-1+len(text):]
	return []byte(strings.Join(lines, "\n"))
}

func TestParseRefusesABrokenFile(t *testing.T) {
	good, err := Marshal(outbound())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(good), "\n"), "\n")
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	drop := func(i int) []byte { return join(append(append([]string(nil), lines[:i]...), lines[i+1:]...)) }
	// outbound(): 1 header, 2 batch 1, 3–5 entries, 6 its control, 7 batch
	// 2, 8 entry, 9 addenda, 10 control, 11 file control, 12–20 nines.
	cases := []struct {
		name string
		data []byte
		line int
		want string
	}{
		{"empty", nil, 0, "empty file"},
		{"a short record", corrupt(t, good, 3, 90, "\n"), 3, "characters, not 94"},
		{"an amount changed", corrupt(t, good, 3, 30, "0000125001"), 6, "cents of credits"},
		{"an RDFI changed", corrupt(t, good, 4, 4, "02600958"), 6, "entry hash"},
		{"an entry dropped", drop(3), 5, "entries and addenda"},
		{"a batch control dropped", drop(5), 6, "batch control"},
		{"the file control's count", corrupt(t, good, 11, 2, "000003"), 11, "3 batches"},
		{"the file control's blocks", corrupt(t, good, 11, 8, "000003"), 11, "3 blocks"},
		{"the file control's credits", corrupt(t, good, 11, 44, "000000000001"), 11, "cents of credits"},
		{"an addenda not announced", corrupt(t, good, 8, 79, "0"), 9, "does not announce"},
		{"an addenda announced, absent", corrupt(t, good, 3, 79, "1"), 4, "addenda the entry announces"},
		{"a letter in an amount", corrupt(t, good, 3, 30, "00001250O0"), 3, "amount"},
		{"a debit in a credits-only batch", corrupt(t, good, 3, 2, "27"), 3, "service class 220"},
		{"a padding line that is not nines", corrupt(t, good, 12, 1, "8"), 12, "line of nines"},
		{"a block too many", join(append(append([]string(nil), lines...), strings.Split(strings.Repeat(strings.Repeat("9", 94)+"\n", 10), "\n")[:10]...)), 0, "more than the 2 blocks"},
		{"no file header", drop(0), 1, "file header"},
		{"no file control", join(lines[:10]), 10, "file control"},
		{"a control byte", corrupt(t, good, 3, 60, "\x00"), 3, "not printable"},
		{"a bad effective date", corrupt(t, good, 2, 70, "261340"), 2, "effective entry date"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %v, want a *ParseError", err)
			}
			if pe.Line != c.line || !strings.Contains(pe.Msg, c.want) {
				t.Errorf("Parse = %v, want record %d: …%s…", err, c.line, c.want)
			}
		})
	}
}

func TestCheckDigitAndSplitRouting(t *testing.T) {
	for _, routing := range []string{"021000021", "011000015", "026009593", "121000248"} {
		rdfi, check, err := SplitRouting(routing)
		if err != nil || rdfi != routing[:8] || check != routing[8] {
			t.Errorf("SplitRouting(%s) = %s, %c, %v", routing, rdfi, check, err)
		}
		if got := CheckDigit(rdfi); got != check {
			t.Errorf("CheckDigit(%s) = %c, want %c", rdfi, got, check)
		}
	}
	if _, _, err := SplitRouting("02100002"); err == nil {
		t.Error("SplitRouting took 8 digits")
	}
}

// FuzzParse: Parse never panics, and what it reads, Marshal writes back
// into a file that Parse reads the same.
func FuzzParse(f *testing.F) {
	for _, file := range []File{outbound(), returns()} {
		data, err := Marshal(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Parse(data)
		if err != nil {
			return
		}
		again, err := Marshal(got)
		if err != nil {
			t.Fatalf("Parse read a file Marshal refuses: %v", err)
		}
		back, err := Parse(again)
		if err != nil {
			t.Fatalf("Parse refuses Marshal's output of what it read: %v", err)
		}
		if !reflect.DeepEqual(back, got) {
			t.Fatalf("round trip changed the file:\n%+v\n%+v", got, back)
		}
	})
}

func TestServiceClassOf(t *testing.T) {
	credit, debit := Entry{TransactionCode: CheckingCredit}, Entry{TransactionCode: CheckingDebit}
	returned := Entry{TransactionCode: CheckingReturn} // a return of a credit counts as a credit
	for _, c := range []struct {
		entries []Entry
		want    int
	}{
		{[]Entry{credit, returned}, CreditsOnly},
		{[]Entry{debit, {TransactionCode: CheckingDebitReturn}}, DebitsOnly},
		{[]Entry{credit, debit}, MixedDebitsAndCredits},
	} {
		if got := ServiceClassOf(c.entries); got != c.want {
			t.Errorf("%v: %d, want %d", c.entries, got, c.want)
		}
	}
}
