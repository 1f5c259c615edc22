// Package pager keeps the position of a list read from the store in pages
// by sequence number (PageQuery.After): forward by the last sequence seen,
// back by a stack of the pages' starting points. Nothing is loaded beyond
// the page shown.
package pager

// Pager is the position in a paged list; the zero value is the first page.
type Pager struct {
	after int64
	back  []int64
}

// After is the sequence the current page starts after.
func (p Pager) After() int64 { return p.after }

// Index is the 1-based number of the current page.
func (p Pager) Index() int { return len(p.back) + 1 }

// Next moves to the page after the one whose last sequence is last.
func (p *Pager) Next(last int64) {
	p.back = append(p.back, p.after)
	p.after = last
}

// Prev moves to the previous page; it reports false on the first page.
func (p *Pager) Prev() bool {
	if len(p.back) == 0 {
		return false
	}
	p.after = p.back[len(p.back)-1]
	p.back = p.back[:len(p.back)-1]
	return true
}

// Reset moves to the first page.
func (p *Pager) Reset() { *p = Pager{} }

// Pages is how many pages of size hold total items (at least 1).
func Pages(total, size int) int {
	if size <= 0 || total <= 0 {
		return 1
	}
	return (total + size - 1) / size
}
