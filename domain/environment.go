package domain

// Environment is sandbox or live. It is a struct around an unexported
// string so that an invalid value cannot be built outside this package.
type Environment struct{ name string }

var (
	Sandbox = Environment{"sandbox"}
	Live    = Environment{"live"}
)

// ParseEnvironment accepts "sandbox" or "live".
func ParseEnvironment(s string) (Environment, bool) {
	switch s {
	case "sandbox":
		return Sandbox, true
	case "live":
		return Live, true
	}
	return Environment{}, false
}

func (e Environment) String() string { return e.name }
func (e Environment) IsZero() bool   { return e.name == "" }

func (e Environment) MarshalText() ([]byte, error) { return []byte(e.name), nil }

func (e *Environment) UnmarshalText(b []byte) error {
	v, ok := ParseEnvironment(string(b))
	if !ok {
		return Invalid("environment", "environment must be sandbox or live")
	}
	*e = v
	return nil
}
