package treasury

//go:generate go run ./internal/generate
