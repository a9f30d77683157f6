package kyb_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
)

// today is the date every validation in this file is checked against.
var today = time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func pct(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func street(line1 string) kyb.Address {
	return kyb.Address{Line1: line1, City: "Springfield", State: "IL", PostalCode: "62701", Country: "US"}
}

// validSubmission is a complete, valid submission with two owners; each
// case below breaks exactly one thing in it.
func validSubmission() kyb.Submission {
	return kyb.Submission{
		Business: kyb.Business{
			LegalName:      "Acme Widgets LLC",
			DBA:            ptr("Acme"),
			EIN:            "12-3456789",
			EntityType:     "llc",
			FormationDate:  "2015-03-01",
			FormationState: "DE",
			Address:        kyb.Address{Line1: "100 Main Street", Line2: ptr("Suite 200"), City: "Wilmington", State: "DE", PostalCode: "19801", Country: "US"},
			Website:        ptr("https://acme.example.com"),
			NAICSCode:      ptr("522110"),
			Phone:          ptr("+13025550100"),
		},
		BeneficialOwner: []kyb.Owner{
			{FirstName: "Jane", LastName: "Doe", DateOfBirth: "1980-01-31", SSNLast4: "4321",
				OwnershipPercentage: pct("60"), IsControlPerson: true, Title: ptr("CEO"), Address: street("1 Elm Street")},
			{FirstName: "John", LastName: "Roe", DateOfBirth: "1975-07-04", SSNLast4: "8765",
				OwnershipPercentage: pct("40"), IsControlPerson: false, Address: street("2 Oak Avenue")},
		},
	}
}

// wantInvalid checks that err is a 400 invalid_request naming param.
func wantInvalid(t *testing.T, err error, param string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want invalid_request on %q", err, param)
	}
	if de.Code != domain.CodeInvalidRequest || de.Param != param {
		t.Fatalf("err = %s param %q (%v), want invalid_request param %q", de.Code, de.Param, err, param)
	}
	if de.Message == "" {
		t.Fatalf("invalid_request on %q has no message", param)
	}
}

func TestValidSubmissionPasses(t *testing.T) {
	if err := validSubmission().Validate(today); err != nil {
		t.Fatalf("valid submission: %v", err)
	}
	// The optional fields may all be absent.
	s := validSubmission()
	s.Business.DBA, s.Business.Website, s.Business.NAICSCode, s.Business.Phone, s.Business.Address.Line2 = nil, nil, nil, nil, nil
	s.BeneficialOwner[0].Title = nil
	if err := s.Validate(today); err != nil {
		t.Fatalf("submission without optional fields: %v", err)
	}
}

type mutation struct {
	name   string
	mutate func(s *kyb.Submission)
	param  string // "" means valid
}

func runMutations(t *testing.T, cases []mutation) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSubmission()
			c.mutate(&s)
			err := s.Validate(today)
			if c.param == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			wantInvalid(t, err, c.param)
		})
	}
}

func TestValidateEIN(t *testing.T) {
	var cases []mutation
	for _, ein := range []string{"12-3456789", "123456789", "00-0000000", "99-9999999", "987654321"} {
		cases = append(cases, mutation{"valid " + ein, func(s *kyb.Submission) { s.Business.EIN = ein }, ""})
	}
	for _, ein := range []string{"", "12-345678", "12345678", "1234567890", "12-34567890", "123-456789",
		"1-23456789", "12 3456789", "12_3456789", "12--3456789", "1234-56789", "ab-cdefghi", "12-34567a9",
		"12\u20143456789", " 123456789", "123456789 ", "123456789\n", "12-3456789\n",
		"\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19", "12-3456789-0"} {
		cases = append(cases, mutation{fmt.Sprintf("invalid %q", ein), func(s *kyb.Submission) { s.Business.EIN = ein }, "business.ein"})
	}
	runMutations(t, cases)
}

func TestValidateBusinessNames(t *testing.T) {
	runMutations(t, []mutation{
		{"legal_name empty", func(s *kyb.Submission) { s.Business.LegalName = "" }, "business.legal_name"},
		{"legal_name blank", func(s *kyb.Submission) { s.Business.LegalName = "   " }, "business.legal_name"},
		{"legal_name 200", func(s *kyb.Submission) { s.Business.LegalName = strings.Repeat("a", 200) }, ""},
		{"legal_name 201", func(s *kyb.Submission) { s.Business.LegalName = strings.Repeat("a", 201) }, "business.legal_name"},
		{"legal_name 200 runes multibyte", func(s *kyb.Submission) { s.Business.LegalName = strings.Repeat("é", 200) }, ""},
		{"dba empty", func(s *kyb.Submission) { s.Business.DBA = ptr("") }, "business.dba"},
		{"dba 201", func(s *kyb.Submission) { s.Business.DBA = ptr(strings.Repeat("d", 201)) }, "business.dba"},
	})
}

func TestValidateEntityType(t *testing.T) {
	var cases []mutation
	for _, et := range []string{"llc", "corporation", "partnership", "sole_proprietorship", "nonprofit"} {
		cases = append(cases, mutation{"valid " + et, func(s *kyb.Submission) { s.Business.EntityType = et }, ""})
	}
	for _, et := range []string{"", "LLC", "Corporation", "s_corp", "trust", " llc", "sole proprietorship"} {
		cases = append(cases, mutation{fmt.Sprintf("invalid %q", et), func(s *kyb.Submission) { s.Business.EntityType = et }, "business.entity_type"})
	}
	runMutations(t, cases)
}

func TestValidateFormationDate(t *testing.T) {
	var cases []mutation
	for _, d := range []string{"2025-06-15" /* today */, "2025-06-14", "1800-01-01", "2000-02-29"} {
		cases = append(cases, mutation{"valid " + d, func(s *kyb.Submission) { s.Business.FormationDate = d }, ""})
	}
	for _, d := range []string{"", "2020-13-01", "2020-02-30", "2021-02-29", "2020/01/01", "01-02-2020", "2020-1-1",
		"2020-01-01T00:00:00Z", "yesterday",
		"2025-06-16" /* tomorrow: in the future */, "2030-01-01", "1799-12-31"} {
		cases = append(cases, mutation{fmt.Sprintf("invalid %q", d), func(s *kyb.Submission) { s.Business.FormationDate = d }, "business.formation_date"})
	}
	runMutations(t, cases)
}

func TestValidateStates(t *testing.T) {
	var cases []mutation
	for _, st := range []string{"CA", "NY", "DC", "PR", "WY"} {
		cases = append(cases,
			mutation{"formation_state " + st, func(s *kyb.Submission) { s.Business.FormationState = st }, ""},
			mutation{"address state " + st, func(s *kyb.Submission) { s.Business.Address.State = st }, ""})
	}
	for _, st := range []string{"", "ca", "Ca", "XX", "CAL", "California", "C", " CA"} {
		cases = append(cases,
			mutation{fmt.Sprintf("formation_state %q", st), func(s *kyb.Submission) { s.Business.FormationState = st }, "business.formation_state"},
			mutation{fmt.Sprintf("business address state %q", st), func(s *kyb.Submission) { s.Business.Address.State = st }, "business.address.state"},
			mutation{fmt.Sprintf("owner address state %q", st), func(s *kyb.Submission) { s.BeneficialOwner[1].Address.State = st }, "beneficial_owners[1].address.state"})
	}
	runMutations(t, cases)
}

func TestValidateAddressFields(t *testing.T) {
	var cases []mutation
	for _, pc := range []string{"19801", "19801-1234", "00501"} {
		cases = append(cases, mutation{"postal_code " + pc, func(s *kyb.Submission) { s.Business.Address.PostalCode = pc }, ""})
	}
	for _, pc := range []string{"", "1234", "123456", "12345-678", "12345 6789", "12345-67890", "ABCDE", "1980l", "123456789"} {
		cases = append(cases,
			mutation{fmt.Sprintf("business postal_code %q", pc), func(s *kyb.Submission) { s.Business.Address.PostalCode = pc }, "business.address.postal_code"},
			mutation{fmt.Sprintf("owner postal_code %q", pc), func(s *kyb.Submission) { s.BeneficialOwner[0].Address.PostalCode = pc }, "beneficial_owners[0].address.postal_code"})
	}
	cases = append(cases,
		mutation{"line1 empty", func(s *kyb.Submission) { s.Business.Address.Line1 = "" }, "business.address.line1"},
		mutation{"line1 blank", func(s *kyb.Submission) { s.Business.Address.Line1 = "  " }, "business.address.line1"},
		mutation{"line1 201", func(s *kyb.Submission) { s.Business.Address.Line1 = strings.Repeat("1", 201) }, "business.address.line1"},
		mutation{"line2 empty is allowed", func(s *kyb.Submission) { s.Business.Address.Line2 = ptr("") }, ""},
		mutation{"line2 201", func(s *kyb.Submission) { s.Business.Address.Line2 = ptr(strings.Repeat("2", 201)) }, "business.address.line2"},
		mutation{"city empty", func(s *kyb.Submission) { s.Business.Address.City = "" }, "business.address.city"},
		mutation{"city 101", func(s *kyb.Submission) { s.Business.Address.City = strings.Repeat("c", 101) }, "business.address.city"},
		mutation{"country USA", func(s *kyb.Submission) { s.Business.Address.Country = "USA" }, "business.address.country"},
		mutation{"country us", func(s *kyb.Submission) { s.Business.Address.Country = "us" }, "business.address.country"},
		mutation{"country empty", func(s *kyb.Submission) { s.Business.Address.Country = "" }, "business.address.country"},
		mutation{"country CA", func(s *kyb.Submission) { s.Business.Address.Country = "CA" }, "business.address.country"},
		mutation{"owner line1 empty", func(s *kyb.Submission) { s.BeneficialOwner[0].Address.Line1 = "" }, "beneficial_owners[0].address.line1"},
		mutation{"owner city empty", func(s *kyb.Submission) { s.BeneficialOwner[1].Address.City = "" }, "beneficial_owners[1].address.city"},
		mutation{"owner country", func(s *kyb.Submission) { s.BeneficialOwner[1].Address.Country = "MX" }, "beneficial_owners[1].address.country"},
	)
	runMutations(t, cases)
}

// poBoxes are spellings of a PO box that must be refused wherever they are.
var poBoxes = []string{
	"P.O. Box 12", "PO BOX", "PO Box 55", "Post Office Box", "Post Office Box 9", "po box 1", "P O Box 3",
	"P. O. Box 7", "p.o.box 7", "P.O.B. 12", "POB 12", "POBox 12", "Box 12", "  box 4", "Postal Box 3",
	"123 Main St PO Box 4", "Attn: Jane, P.O. Box 88", "PO Box #12", "POST OFFICE BOX 1",
}

// notPOBoxes merely look like one.
var notPOBoxes = []string{
	"1 Boxwood Lane", "Pobrecito St", "500 Boxer Blvd", "12 Post Office Road", "Box Elder Avenue",
	"77 Poboy Lane", "Suite 100", "Apt 4B", "9 Tombox Court", "1 Polo Bay Drive",
}

func TestValidatePOBoxes(t *testing.T) {
	var cases []mutation
	where := []struct {
		name  string
		set   func(s *kyb.Submission, v string)
		param string
	}{
		{"business line1", func(s *kyb.Submission, v string) { s.Business.Address.Line1 = v }, "business.address.line1"},
		{"business line2", func(s *kyb.Submission, v string) { s.Business.Address.Line2 = &v }, "business.address.line2"},
		{"owner0 line1", func(s *kyb.Submission, v string) { s.BeneficialOwner[0].Address.Line1 = v }, "beneficial_owners[0].address.line1"},
		{"owner1 line2", func(s *kyb.Submission, v string) { s.BeneficialOwner[1].Address.Line2 = &v }, "beneficial_owners[1].address.line2"},
	}
	for _, w := range where {
		for _, v := range poBoxes {
			cases = append(cases, mutation{fmt.Sprintf("%s %q refused", w.name, v), func(s *kyb.Submission) { w.set(s, v) }, w.param})
		}
		for _, v := range notPOBoxes {
			cases = append(cases, mutation{fmt.Sprintf("%s %q accepted", w.name, v), func(s *kyb.Submission) { w.set(s, v) }, ""})
		}
	}
	runMutations(t, cases)
}

// The box number is often written against the word: "PO Box12". That is
// still a PO box.
func TestValidatePOBoxWithNumberAttached(t *testing.T) {
	var cases []mutation
	for _, v := range []string{"PO Box12", "P.O. Box12", "POBox12", "Post Office Box12"} {
		cases = append(cases,
			mutation{fmt.Sprintf("business line1 %q refused", v), func(s *kyb.Submission) { s.Business.Address.Line1 = v }, "business.address.line1"},
			mutation{fmt.Sprintf("owner line2 %q refused", v), func(s *kyb.Submission) { s.BeneficialOwner[0].Address.Line2 = &v }, "beneficial_owners[0].address.line2"})
	}
	runMutations(t, cases)
}

func TestValidateOptionalBusinessFields(t *testing.T) {
	var cases []mutation
	for _, w := range []string{"https://example.com", "http://example.com/about?x=1", "https://" + strings.Repeat("a", 192)} {
		cases = append(cases, mutation{"website " + w[:min(len(w), 30)], func(s *kyb.Submission) { s.Business.Website = ptr(w) }, ""})
	}
	for _, w := range []string{"", "example.com", "www.example.com", "ftp://example.com", "https://exa mple.com",
		"https://example.com\n", "HTTPS//example.com", "javascript:alert(1)", "https://" + strings.Repeat("a", 193)} {
		cases = append(cases, mutation{fmt.Sprintf("website %.30q", w), func(s *kyb.Submission) { s.Business.Website = ptr(w) }, "business.website"})
	}
	for _, n := range []string{"52", "522", "5221", "52211", "522110"} {
		cases = append(cases, mutation{"naics " + n, func(s *kyb.Submission) { s.Business.NAICSCode = ptr(n) }, ""})
	}
	for _, n := range []string{"", "5", "5221101", "52a1", "52-21", " 5221"} {
		cases = append(cases, mutation{fmt.Sprintf("naics %q", n), func(s *kyb.Submission) { s.Business.NAICSCode = ptr(n) }, "business.naics_code"})
	}
	for _, p := range []string{"+13025550100", "3025550100", "+441234567890", "123456789012345"} {
		cases = append(cases, mutation{"phone " + p, func(s *kyb.Submission) { s.Business.Phone = ptr(p) }, ""})
	}
	for _, p := range []string{"", "555-0100", "302-555-0100", "+1 302 555 0100", "(302) 5550100", "123456789",
		"+1234567890123456", "++13025550100", "phone"} {
		cases = append(cases, mutation{fmt.Sprintf("phone %q", p), func(s *kyb.Submission) { s.Business.Phone = ptr(p) }, "business.phone"})
	}
	runMutations(t, cases)
}

func TestValidateOwnerFields(t *testing.T) {
	runMutations(t, []mutation{
		{"first_name empty", func(s *kyb.Submission) { s.BeneficialOwner[0].FirstName = "" }, "beneficial_owners[0].first_name"},
		{"first_name blank", func(s *kyb.Submission) { s.BeneficialOwner[1].FirstName = " \t" }, "beneficial_owners[1].first_name"},
		{"first_name 101", func(s *kyb.Submission) { s.BeneficialOwner[0].FirstName = strings.Repeat("f", 101) }, "beneficial_owners[0].first_name"},
		{"last_name empty", func(s *kyb.Submission) { s.BeneficialOwner[1].LastName = "" }, "beneficial_owners[1].last_name"},
		{"title empty", func(s *kyb.Submission) { s.BeneficialOwner[0].Title = ptr("") }, "beneficial_owners[0].title"},
		{"title 101", func(s *kyb.Submission) { s.BeneficialOwner[1].Title = ptr(strings.Repeat("t", 101)) }, "beneficial_owners[1].title"},
		{"ssn 3 digits", func(s *kyb.Submission) { s.BeneficialOwner[0].SSNLast4 = "123" }, "beneficial_owners[0].ssn_last4"},
		{"ssn 5 digits", func(s *kyb.Submission) { s.BeneficialOwner[0].SSNLast4 = "12345" }, "beneficial_owners[0].ssn_last4"},
		{"ssn full", func(s *kyb.Submission) { s.BeneficialOwner[1].SSNLast4 = "123-45-6789" }, "beneficial_owners[1].ssn_last4"},
		{"ssn letters", func(s *kyb.Submission) { s.BeneficialOwner[1].SSNLast4 = "abcd" }, "beneficial_owners[1].ssn_last4"},
		{"ssn empty", func(s *kyb.Submission) { s.BeneficialOwner[0].SSNLast4 = "" }, "beneficial_owners[0].ssn_last4"},
		{"ssn 0000 allowed", func(s *kyb.Submission) { s.BeneficialOwner[0].SSNLast4 = "0000" }, ""},
	})
}

func TestValidateOwnerAge(t *testing.T) {
	runMutations(t, []mutation{
		{"18 today", func(s *kyb.Submission) { s.BeneficialOwner[0].DateOfBirth = "2007-06-15" }, ""},
		{"18 tomorrow", func(s *kyb.Submission) { s.BeneficialOwner[0].DateOfBirth = "2007-06-16" }, "beneficial_owners[0].date_of_birth"},
		{"17", func(s *kyb.Submission) { s.BeneficialOwner[1].DateOfBirth = "2010-01-01" }, "beneficial_owners[1].date_of_birth"},
		{"born today", func(s *kyb.Submission) { s.BeneficialOwner[0].DateOfBirth = "2025-06-15" }, "beneficial_owners[0].date_of_birth"},
		{"born in the future", func(s *kyb.Submission) { s.BeneficialOwner[0].DateOfBirth = "2030-01-01" }, "beneficial_owners[0].date_of_birth"},
		{"120", func(s *kyb.Submission) { s.BeneficialOwner[0].DateOfBirth = "1905-01-01" }, ""},
		{"too old", func(s *kyb.Submission) { s.BeneficialOwner[0].DateOfBirth = "1900-01-01" }, "beneficial_owners[0].date_of_birth"},
		{"bad format", func(s *kyb.Submission) { s.BeneficialOwner[1].DateOfBirth = "07/04/1975" }, "beneficial_owners[1].date_of_birth"},
		{"bad day", func(s *kyb.Submission) { s.BeneficialOwner[1].DateOfBirth = "1975-02-30" }, "beneficial_owners[1].date_of_birth"},
		{"empty", func(s *kyb.Submission) { s.BeneficialOwner[0].DateOfBirth = "" }, "beneficial_owners[0].date_of_birth"},
	})
}

func owners(pcts ...string) []kyb.Owner {
	out := make([]kyb.Owner, len(pcts))
	for i, p := range pcts {
		out[i] = kyb.Owner{FirstName: fmt.Sprintf("Owner%d", i), LastName: "Smith", DateOfBirth: "1970-01-01",
			SSNLast4: "1234", OwnershipPercentage: pct(p), IsControlPerson: i == 0, Address: street(fmt.Sprintf("%d Main St", i+1))}
	}
	return out
}

func TestValidateOwnership(t *testing.T) {
	set := func(pcts ...string) func(s *kyb.Submission) {
		return func(s *kyb.Submission) { s.BeneficialOwner = owners(pcts...) }
	}
	runMutations(t, []mutation{
		{"100 exactly", set("60", "40"), ""},
		{"under 100", set("10", "15"), ""},
		{"zero percent control person", set("0"), ""},
		{"thirds to 100", set("33.33", "33.33", "33.34"), ""},
		{"four decimals to 100", set("33.3333", "33.3333", "33.3334"), ""},
		{"four decimals under 100", set("33.3333", "33.3333", "33.3333"), ""},
		{"halves", set("50.5", "49.5"), ""},
		{"100.01 in total", set("60", "40.01"), "beneficial_owners"},
		{"100.0001 in total", set("99.9999", "0.0002"), "beneficial_owners"},
		{"101 over three", set("50", "50", "1"), "beneficial_owners"},
		{"200", set("100", "100"), "beneficial_owners"},
		{"one over 100", set("100.5"), "beneficial_owners[0].ownership_percentage"},
		{"negative", set("60", "-10"), "beneficial_owners[1].ownership_percentage"},
		{"five decimals", set("10.12345"), "beneficial_owners[0].ownership_percentage"},
		{"no owners", func(s *kyb.Submission) { s.BeneficialOwner = []kyb.Owner{} }, "beneficial_owners"},
		{"nil owners", func(s *kyb.Submission) { s.BeneficialOwner = nil }, "beneficial_owners"},
		{"no control person", func(s *kyb.Submission) { s.BeneficialOwner[0].IsControlPerson = false }, "beneficial_owners"},
		{"control person with no ownership", func(s *kyb.Submission) {
			s.BeneficialOwner[0].IsControlPerson = false
			s.BeneficialOwner = append(s.BeneficialOwner, kyb.Owner{FirstName: "Carl", LastName: "Control", DateOfBirth: "1990-05-05",
				SSNLast4: "1111", OwnershipPercentage: pct("0"), IsControlPerson: true, Address: street("3 Pine Rd")})
		}, ""},
		{"25 owners", func(s *kyb.Submission) {
			ps := make([]string, kyb.MaxOwners)
			for i := range ps {
				ps[i] = "4"
			}
			s.BeneficialOwner = owners(ps...)
		}, ""},
		{"26 owners", func(s *kyb.Submission) {
			ps := make([]string, kyb.MaxOwners+1)
			for i := range ps {
				ps[i] = "1"
			}
			s.BeneficialOwner = owners(ps...)
		}, "beneficial_owners"},
	})
}

// The first invalid field is named, in the order of the request.
func TestValidateNamesTheFirstBadField(t *testing.T) {
	s := validSubmission()
	s.Business.EIN = "bad"
	s.BeneficialOwner[1].SSNLast4 = "x"
	wantInvalid(t, s.Validate(today), "business.ein")
	s = validSubmission()
	s.BeneficialOwner[0].SSNLast4 = "x"
	s.BeneficialOwner[1].SSNLast4 = "y"
	wantInvalid(t, s.Validate(today), "beneficial_owners[0].ssn_last4")
}

// No validation message may echo the EIN or SSN the platform sent.
func TestValidationMessagesDoNotEchoIdentifiers(t *testing.T) {
	s := validSubmission()
	s.Business.EIN = "98-76543210" // malformed: one digit too many
	err := s.Validate(today)
	wantInvalid(t, err, "business.ein")
	if strings.Contains(err.Error(), "76543210") {
		t.Fatalf("message echoes the EIN: %v", err)
	}
	s = validSubmission()
	s.BeneficialOwner[0].SSNLast4 = "97531"
	err = s.Validate(today)
	wantInvalid(t, err, "beneficial_owners[0].ssn_last4")
	if strings.Contains(err.Error(), "9753") {
		t.Fatalf("message echoes the SSN: %v", err)
	}
}

func TestEINLast4(t *testing.T) {
	for ein, want := range map[string]string{"12-3456789": "6789", "123456789": "6789", "98-7650000": "0000", "111111111": "1111"} {
		s := validSubmission()
		s.Business.EIN = ein
		if got := s.EINLast4(); got != want {
			t.Errorf("EINLast4(%q) = %q, want %q", ein, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	s := validSubmission()
	want := []kyb.NamedField{{Field: "business.legal_name", Name: "Acme Widgets LLC"}, {Field: "business.dba", Name: "Acme"},
		{Field: "beneficial_owners[0]", Name: "Jane Doe"}, {Field: "beneficial_owners[1]", Name: "John Roe"}}
	got := s.Names()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	s.Business.DBA = nil
	if got := s.Names(); len(got) != 3 || got[1].Field != "beneficial_owners[0]" {
		t.Fatalf("Names() without dba = %v", got)
	}
}
