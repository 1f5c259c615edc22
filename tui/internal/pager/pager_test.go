package pager

import "testing"

func TestPager(t *testing.T) {
	var p Pager
	if p.After() != 0 || p.Index() != 1 || p.Prev() {
		t.Fatalf("zero pager: after %d index %d", p.After(), p.Index())
	}
	p.Next(10)
	p.Next(25)
	if got, want := p.After(), int64(25); got != want || p.Index() != 3 {
		t.Fatalf("after two pages: after %d index %d, want %d and 3", got, p.Index(), want)
	}
	if !p.Prev() || p.After() != 10 || !p.Prev() || p.After() != 0 || p.Prev() {
		t.Fatalf("back to the first page: after %d", p.After())
	}
	for _, tc := range []struct{ total, size, want int }{{0, 5, 1}, {5, 5, 1}, {6, 5, 2}, {10001, 100, 101}, {3, 0, 1}} {
		if got := Pages(tc.total, tc.size); got != tc.want {
			t.Errorf("Pages(%d, %d) = %d, want %d", tc.total, tc.size, got, tc.want)
		}
	}
}
