package domain

import "strings"

// ScreeningHit reports whether a name is on the screening list. The list
// built in is the sandbox's: any name containing "OFAC TEST", in any case
// (API.md §5). A real sanctions list plugs in here.
func ScreeningHit(name string) bool {
	return strings.Contains(strings.ToUpper(name), "OFAC TEST")
}
