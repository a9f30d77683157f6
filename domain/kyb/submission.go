package kyb

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
)

// Entity types a business may have.
var entityTypes = map[string]bool{"llc": true, "corporation": true, "partnership": true,
	"sole_proprietorship": true, "nonprofit": true}

// usStates are the two-letter codes of the states, DC and the territories.
var usStates = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS
		MO MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR GU VI AS MP`) {
		usStates[s] = true
	}
}

// Address is a US street address. PO boxes are refused: a business must
// be found where it says it is.
type Address struct {
	Line1      string  `json:"line1"`
	Line2      *string `json:"line2,omitempty"`
	City       string  `json:"city"`
	State      string  `json:"state"`
	PostalCode string  `json:"postal_code"`
	Country    string  `json:"country"`
}

// Business is the business a verification is about.
type Business struct {
	LegalName      string  `json:"legal_name"`
	DBA            *string `json:"dba,omitempty"`
	EIN            string  `json:"ein"`
	EntityType     string  `json:"entity_type"`
	FormationDate  string  `json:"formation_date"`
	FormationState string  `json:"formation_state"`
	Address        Address `json:"address"`
	Website        *string `json:"website,omitempty"`
	NAICSCode      *string `json:"naics_code,omitempty"`
	Phone          *string `json:"phone,omitempty"`
}

// Owner is a beneficial owner or control person.
type Owner struct {
	FirstName           string          `json:"first_name"`
	LastName            string          `json:"last_name"`
	DateOfBirth         string          `json:"date_of_birth"`
	SSNLast4            string          `json:"ssn_last4"`
	OwnershipPercentage decimal.Decimal `json:"ownership_percentage"`
	IsControlPerson     bool            `json:"is_control_person"`
	Title               *string         `json:"title,omitempty"`
	Address             Address         `json:"address"`
}

// Submission is a KYB request as the platform sent it (full digits). It
// never leaves the request: the log keeps its Masked form.
type Submission struct {
	Business        Business
	BeneficialOwner []Owner
}

// MaxOwners bounds the beneficial owners of one submission.
const MaxOwners = 25

var (
	einPattern    = regexp.MustCompile(`^(?:[0-9]{2}-[0-9]{7}|[0-9]{9})$`)
	postalPattern = regexp.MustCompile(`^[0-9]{5}(?:-[0-9]{4})?$`)
	naicsPattern  = regexp.MustCompile(`^[0-9]{2,6}$`)
	phonePattern  = regexp.MustCompile(`^\+?[0-9]{10,15}$`)
	ssn4Pattern   = regexp.MustCompile(`^[0-9]{4}$`)
	// A PO box in any of its usual spellings: "PO Box", "P.O. Box",
	// "Post Office Box", "POB 12", "Box 12" alone.
	poBoxPattern = regexp.MustCompile(`(?i)\b(p\.?\s*o\.?\s*b(ox)?|post\s+office\s+box|postal\s+box)(\b|[0-9])|^\s*box\s+[0-9]`)
)

// Validate checks a submission field by field (400 naming the field).
// today bounds dates (formation in the past, owners 18 or older).
func (s Submission) Validate(today time.Time) error {
	b := s.Business
	if err := text("business.legal_name", b.LegalName, 1, 200); err != nil {
		return err
	}
	if b.DBA != nil {
		if err := text("business.dba", *b.DBA, 1, 200); err != nil {
			return err
		}
	}
	if !einPattern.MatchString(b.EIN) {
		return domain.Invalid("business.ein", "ein must be 12-3456789 or 9 digits")
	}
	if !entityTypes[b.EntityType] {
		return domain.Invalid("business.entity_type", "entity_type must be llc, corporation, partnership, sole_proprietorship or nonprofit")
	}
	formed, err := date("business.formation_date", b.FormationDate)
	if err != nil {
		return err
	}
	if formed.After(today) || formed.Year() < 1800 {
		return domain.Invalid("business.formation_date", "formation_date must be a past date")
	}
	if !usStates[b.FormationState] {
		return domain.Invalid("business.formation_state", "formation_state must be a two-letter US state code")
	}
	if err := b.Address.validate("business.address"); err != nil {
		return err
	}
	if b.Website != nil && (len(*b.Website) > 200 || !(strings.HasPrefix(*b.Website, "https://") || strings.HasPrefix(*b.Website, "http://")) || strings.ContainsAny(*b.Website, " \t\n")) {
		return domain.Invalid("business.website", "website must be an http(s) URL of at most 200 characters")
	}
	if b.NAICSCode != nil && !naicsPattern.MatchString(*b.NAICSCode) {
		return domain.Invalid("business.naics_code", "naics_code must be 2 to 6 digits")
	}
	if b.Phone != nil && !phonePattern.MatchString(*b.Phone) {
		return domain.Invalid("business.phone", "phone must be 10 to 15 digits, optionally after +")
	}
	return s.validateOwners(today)
}

func (s Submission) validateOwners(today time.Time) error {
	owners := s.BeneficialOwner
	if len(owners) == 0 {
		return domain.Invalid("beneficial_owners", "at least one beneficial owner, a control person, is required")
	}
	if len(owners) > MaxOwners {
		return domain.Invalid("beneficial_owners", "at most %d beneficial owners", MaxOwners)
	}
	total := decimal.Zero
	control := false
	for i, o := range owners {
		p := fmt.Sprintf("beneficial_owners[%d]", i)
		if err := text(p+".first_name", o.FirstName, 1, 100); err != nil {
			return err
		}
		if err := text(p+".last_name", o.LastName, 1, 100); err != nil {
			return err
		}
		born, err := date(p+".date_of_birth", o.DateOfBirth)
		if err != nil {
			return err
		}
		if born.AddDate(18, 0, 0).After(today) || born.Year() < today.Year()-120 {
			return domain.Invalid(p+".date_of_birth", "a beneficial owner must be 18 to 120 years old")
		}
		if !ssn4Pattern.MatchString(o.SSNLast4) {
			return domain.Invalid(p+".ssn_last4", "ssn_last4 must be 4 digits")
		}
		pct := o.OwnershipPercentage
		if pct.IsNegative() || pct.GreaterThan(decimal.NewFromInt(100)) || pct.Exponent() < -4 {
			return domain.Invalid(p+".ownership_percentage", "ownership_percentage must be 0 to 100, with at most 4 decimals")
		}
		total = total.Add(pct)
		control = control || o.IsControlPerson
		if o.Title != nil {
			if err := text(p+".title", *o.Title, 1, 100); err != nil {
				return err
			}
		}
		if err := o.Address.validate(p + ".address"); err != nil {
			return err
		}
	}
	if total.GreaterThan(decimal.NewFromInt(100)) {
		return domain.Invalid("beneficial_owners", "ownership percentages add up to %s; at most 100", total.String())
	}
	if !control {
		return domain.Invalid("beneficial_owners", "at least one beneficial owner must be a control person (is_control_person: true)")
	}
	return nil
}

func (a Address) validate(p string) error {
	if err := text(p+".line1", a.Line1, 1, 200); err != nil {
		return err
	}
	if poBoxPattern.MatchString(a.Line1) {
		return domain.Invalid(p+".line1", "PO boxes are not accepted: give a street address")
	}
	if a.Line2 != nil {
		if err := text(p+".line2", *a.Line2, 0, 200); err != nil {
			return err
		}
		if poBoxPattern.MatchString(*a.Line2) {
			return domain.Invalid(p+".line2", "PO boxes are not accepted: give a street address")
		}
	}
	if err := text(p+".city", a.City, 1, 100); err != nil {
		return err
	}
	if !usStates[a.State] {
		return domain.Invalid(p+".state", "state must be a two-letter US state code")
	}
	if !postalPattern.MatchString(a.PostalCode) {
		return domain.Invalid(p+".postal_code", "postal_code must be 5 digits or ZIP+4 (12345-6789)")
	}
	if a.Country != "US" {
		return domain.Invalid(p+".country", "country must be US")
	}
	return nil
}

func text(param, s string, min, max int) error {
	n := utf8.RuneCountInString(strings.TrimSpace(s))
	if n < min || utf8.RuneCountInString(s) > max {
		if min > 0 {
			return domain.Invalid(param, "%s must be %d to %d characters", param, min, max)
		}
		return domain.Invalid(param, "%s must be at most %d characters", param, max)
	}
	return nil
}

func date(param, s string) (time.Time, error) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return t, domain.Invalid(param, "%s must be a date YYYY-MM-DD", param)
	}
	return t, nil
}

// Names are what screening looks at: the business's and every owner's.
func (s Submission) Names() []NamedField {
	out := []NamedField{{"business.legal_name", s.Business.LegalName}}
	if s.Business.DBA != nil {
		out = append(out, NamedField{"business.dba", *s.Business.DBA})
	}
	for i, o := range s.BeneficialOwner {
		out = append(out, NamedField{fmt.Sprintf("beneficial_owners[%d]", i), o.FirstName + " " + o.LastName})
	}
	return out
}

// NamedField is a name and where it was in the request.
type NamedField struct {
	Field string
	Name  string
}

// EINLast4 is the last four digits of the EIN.
func (s Submission) EINLast4() string {
	e := strings.ReplaceAll(s.Business.EIN, "-", "")
	return e[len(e)-4:]
}
