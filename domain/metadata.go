package domain

import "unicode/utf8"

// Metadata limits of API.md §1.
const (
	MaxMetadataKeys     = 50
	MaxMetadataKeyLen   = 40
	MaxMetadataValueLen = 500
)

// ValidateMetadata checks the metadata limits; param is the field's name in the request.
func ValidateMetadata(param string, m map[string]string) error {
	if len(m) > MaxMetadataKeys {
		return Invalid(param, "metadata has %d keys; at most %d are allowed", len(m), MaxMetadataKeys)
	}
	for k, v := range m {
		if k == "" {
			return Invalid(param, "metadata keys must be 1 to %d characters", MaxMetadataKeyLen)
		}
		if utf8.RuneCountInString(k) > MaxMetadataKeyLen {
			return Invalid(param+"."+k, "metadata keys must be 1 to %d characters", MaxMetadataKeyLen)
		}
		if utf8.RuneCountInString(v) > MaxMetadataValueLen {
			return Invalid(param+"."+k, "metadata values must be at most %d characters", MaxMetadataValueLen)
		}
	}
	return nil
}
