package treasury

import (
	"iter"
	"maps"
)

// paginate walks every page of a list: fetch gets one page from a cursor (nil
// for the first page) and returns its data, has_more and next_cursor. The
// sequence yields each item, and stops after yielding an error.
func paginate[T any](start *string, fetch func(cursor *string) ([]T, bool, *string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := start
		for {
			data, hasMore, next, err := fetch(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range data {
				if !yield(item, nil) {
					return
				}
			}
			if !hasMore || next == nil || *next == "" {
				return
			}
			cursor = next
		}
	}
}

// Collect gathers every item of a list into a slice, stopping at the first
// error.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for item, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, item)
	}
	return out, nil
}

// valueOf returns *p, or the zero value when p is nil: a copy the list
// methods can set the cursor on without changing the caller's parameters.
func valueOf[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// metadataFilter returns the filter a list sends on every page
// (metadata[key]=value, deepObject; several pairs all match): a copy taken
// when the list is called, so a change to the caller's map does not reach the
// later pages, and nil for a nil or empty filter, which sends nothing.
func metadataFilter(f *MetadataFilter) *MetadataFilter {
	if f == nil || len(*f) == 0 {
		return nil
	}
	m := maps.Clone(*f)
	return &m
}
