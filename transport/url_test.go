package transport

import "testing"

func TestPlaintext(t *testing.T) {
	tests := []struct {
		url   string
		plain bool
	}{
		{"ws://127.0.0.1:7000", false},
		{"ws://127.8.9.10:7000", false},
		{"ws://[::1]:7000", false},
		{"ws://localhost:7000", false},
		{"ws://LOCALHOST", false},
		{"wss://relay.example", false},
		{"ws://relay.example:7000", true},
		{"ws://192.0.2.7:7000", true},
		{"ws://[2001:db8::1]:7000", true},
		{"ws://[::ffff:127.0.0.1]:7000", false},
	}
	for _, tt := range tests {
		if _, got := Plaintext(tt.url); got != tt.plain {
			t.Errorf("Plaintext(%s) = %v, want %v", tt.url, got, tt.plain)
		}
	}
}
